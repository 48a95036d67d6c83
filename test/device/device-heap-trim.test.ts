// While nobody is in front of a realtime camera, the capture pipeline gives the process's free heap memory
// back to the kernel (native/core/camera/heap_trim.h): once as it goes idle, then every idleTrimMs while it
// stays idle, never while a face is in view, and never when idle detection is off.
import t from 'tap';

import type { CameraStatus } from '../../src/device/native-camera';
import { demoPhotos, deviceConfig, runToEnd } from '../helpers/device';

/** A realtime synthetic scenario run to its end with the pipeline's idleTrimMs; the final status. */
async function run(scenario: string, idleDetectFps: number, idleTrimMs: number): Promise<CameraStatus> {
  const config = deviceConfig({
    camera: { source: 'synthetic', idle_detect_fps: idleDetectFps, sources: { synthetic: { scenario, loop: false, realtime: true, seed: 4247001 } } },
  });
  const { status } = await runToEnd(config, { photos: await demoPhotos(), overrides: { idleTrimMs } });
  return status;
}

t.test('one trim as each idle period starts, none while a face is in view', async (t) => {
  // Idle from 1 s into each empty segment; the live segment between them is never idle. A period far
  // longer than the run leaves only the trims made on entering idle.
  const status = await run('none:2,live:2,none:2', 5, 600_000);
  t.equal(status.heapTrims, 2, 'a trim on entering each of the two idle periods');
  t.ok(status.framesIdleSkipped > 0, 'the pipeline was idle');
});

t.test('again every idleTrimMs while the scene stays empty', async (t) => {
  // Idle from 1 s to 4 s: on entering, then every 0.5 s.
  const status = await run('none:4', 5, 500);
  t.ok(status.heapTrims >= 4, `trims while idle for about 3 s: ${status.heapTrims}`);
  t.ok(status.heapTrims <= 8, `not more often than every 0.5 s: ${status.heapTrims}`);
});

t.test('no trim without idle detection or with idleTrimMs = 0', async (t) => {
  t.equal((await run('none:2.5', 0, 500)).heapTrims, 0, 'idle_detect_fps = 0: never idle, never trimmed');
  t.equal((await run('none:2.5', 5, 0)).heapTrims, 0, 'idleTrimMs = 0: idle, never trimmed');
});
