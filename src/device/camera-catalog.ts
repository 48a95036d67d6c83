// The addon's camera source registry (native/core/camera/source_registry.cpp) as TypeScript sees it: the
// one list of sources, each with its options, the USB devices it drives and the recordings it plays. The
// ini's [camera.<source>] sections are checked against it (camera-settings.ts), `service install` writes
// udev rules from it, and docs/device.md is tested against it.
import { native } from '../native';

export type CameraOptionType = 'text' | 'integer' | 'number' | 'flag' | 'choice';

export interface CameraOptionSpec {
  key: string;
  type: CameraOptionType;
  /** The default, in the type's spelling. */
  default: string;
  /** integer / number bounds, inclusive. */
  min?: number;
  max?: number;
  choices?: string[];
  doc: string;
  /** A file or folder: a relative value is resolved against the ini's folder. */
  path: boolean;
  /** false: set by the program itself (face-check record), never by the ini. */
  settable: boolean;
}

export interface UsbDeviceId {
  /** Lower-case hex. */
  vendor: string;
  /** Lower-case hex; empty: every product of the vendor. */
  product: string;
  model: string;
}

export interface CameraSourceDescription {
  name: string;
  summary: string;
  /** What to check when it does not connect (the start-up warning); empty: nothing specific. */
  hint: string;
  /** The run-time library it loads (dlopen); empty: built in. */
  library: string;
  /** The option naming that library. */
  libraryOption: string;
  options: CameraOptionSpec[];
  usb: UsbDeviceId[];
  /** Files this source plays: a replay of such a file opens this source with recordingOption = the file. */
  recordingExtensions: string[];
  recordingOption: string;
}

export interface CameraSourceState {
  name: string;
  /** Its library loads here (built-in sources always). */
  usable: boolean;
  detail: string;
}

interface CatalogAddon {
  cameraCatalog(): CameraSourceDescription[];
  cameraSourceStatus(libraries?: Record<string, string>): CameraSourceState[];
}

const addon = native as unknown as CatalogAddon;
let catalog: readonly CameraSourceDescription[] | undefined;

/** Every source compiled into the addon, in the registry's order. */
export function cameraCatalog(): readonly CameraSourceDescription[] {
  return (catalog ??= Object.freeze(addon.cameraCatalog()));
}

export function cameraSourceNames(): string[] {
  return cameraCatalog().map((s) => s.name);
}

export function findCameraSource(name: string): CameraSourceDescription | undefined {
  return cameraCatalog().find((s) => s.name === name);
}

/** The source that plays a recording file by its extension (".oni": openni2), if any. */
export function sourceForRecording(file: string): CameraSourceDescription | undefined {
  const lower = file.toLowerCase();
  return cameraCatalog().find((s) => s.recordingExtensions.some((ext) => lower.endsWith(ext)));
}

/**
 * Whether each compiled source can open here: its library loads (dlopen). `libraries` names the library a
 * source is configured with (by source name); others are probed with their default.
 */
export function cameraSourceStatus(libraries: Record<string, string> = {}): CameraSourceState[] {
  return addon.cameraSourceStatus(libraries);
}
