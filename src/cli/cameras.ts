// `face-check cameras [--config <file.ini>] [--format text|json]`: the camera sources this build has, whether each can
// open where it runs (its SDK library loads), the options its [camera.<source>] section takes and the
// USB devices it drives. With --config, a source's library is probed as that ini names it, and the ini's
// camera sections are checked.
import { cameraCatalog, cameraSourceStatus, type CameraOptionSpec } from '../device/camera-catalog';
import { checkCameraConfig } from '../device/camera-settings';
import { configOf, stringFlag, UsageError, type Args, type Io } from './args';

export const CAMERAS_USAGE = '  face-check cameras [--config <file.ini>] [--format text|json]';

function describeOption(o: CameraOptionSpec): string {
  const range = o.choices ? o.choices.join(' | ') : o.min !== undefined ? `${o.min} to ${o.max}` : o.type;
  return `${o.key} = ${o.default === '' ? '(empty)' : o.default}   ${range}; ${o.doc}`;
}

export async function camerasCommand(args: Args, io: Io): Promise<number> {
  const format = stringFlag(args, 'format') ?? 'text';
  if (format !== 'text' && format !== 'json') throw new UsageError('cameras: --format text or json');
  const libraries: Record<string, string> = {};
  let chosen: string | undefined;
  if (args.flags.has('config')) {
    const config = configOf(args);
    const settings = checkCameraConfig(config);
    chosen = settings?.configured.name ?? 'none';
    for (const source of cameraCatalog()) {
      const library = settings?.source.name === source.name ? settings.options[source.libraryOption] : config.camera.sources[source.name]?.[source.libraryOption];
      if (source.libraryOption && library !== undefined) libraries[source.name] = String(library);
    }
  }
  const states = cameraSourceStatus(libraries);
  const sources = cameraCatalog().map((s) => {
    const state = states.find((x) => x.name === s.name);
    return { ...s, usable: state?.usable ?? false, detail: state?.detail ?? '', ...(chosen !== undefined ? { configured: s.name === chosen } : {}) };
  });
  if (format === 'json') {
    io.out(JSON.stringify({ sources, ...(chosen !== undefined ? { configured: chosen } : {}) }, null, 2));
    return 0;
  }
  for (const s of sources) {
    io.out(`${s.name}${s.name === chosen ? ' (configured)' : ''}: ${s.summary}`);
    io.out(`  ${s.usable ? 'can open here' : 'cannot open here'}: ${s.detail}`);
    const settable = s.options.filter((o) => o.settable);
    if (settable.length) io.out(`  [camera.${s.name}]`);
    for (const o of settable) io.out(`    ${describeOption(o)}`);
    if (s.usb.length) io.out(`  USB: ${s.usb.map((u) => `${u.vendor}${u.product ? `:${u.product}` : ''} (${u.model})`).join(', ')}`);
    if (s.recordingExtensions.length) io.out(`  plays recordings: ${s.recordingExtensions.join(', ')}`);
  }
  return 0;
}
