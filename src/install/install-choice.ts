// The camera and the port an installation command sets up on the device (`device install --camera --port`),
// picked on the licence line when the command is shown. Left out, the device gets the defaults of
// `device install` (freenect, 8080).
import { DEFAULT_DEVICE_PORT, installCameras } from './device-ini';

export interface InstallChoice {
  /** A source an installed device can run (installCameras()), or none. */
  camera?: string;
  port?: number;
}

export class InstallChoiceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InstallChoiceError';
  }
}

/** A choice from text (a form's query, command-line flags): empty fields are left out; anything else is checked. */
export function parseInstallChoice(camera: string | undefined, port: string | undefined): InstallChoice {
  const choice: InstallChoice = {};
  if (camera) {
    if (!installCameras().includes(camera)) throw new InstallChoiceError(`The camera is one of ${installCameras().join(', ')}.`);
    choice.camera = camera;
  }
  if (port) {
    const n = Number(port);
    if (!/^\d{1,5}$/.test(port) || n < 1 || n > 65535) throw new InstallChoiceError('The port is a number from 1 to 65535.');
    choice.port = n;
  }
  return choice;
}

/** The `device install` options of a choice, in a form the command needs no quoting for (checked above). */
export function installChoiceFlags(choice: InstallChoice = {}): string {
  return [
    ...(choice.camera ? [`--camera ${parseInstallChoice(choice.camera, undefined).camera}`] : []),
    ...(choice.port !== undefined && choice.port !== DEFAULT_DEVICE_PORT ? [`--port ${parseInstallChoice(undefined, String(choice.port)).port}`] : []),
  ].map((f) => ` ${f}`).join('');
}
