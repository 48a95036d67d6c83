// What `face-check serve` starts before the rest of the program loads (src/start/early-start.ts): the engine
// and a device's camera, each handed to the start once; nothing for other commands or a bad ini.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { parseArgs, configOf } from '../../src/cli/args';
import { templateModelId } from '../../src/engine/template-spec';
import { beginEarlyServe } from '../../src/cli/early-serve';
import { cameraForStart, earlyStartWaiting, engineForStart } from '../../src/start/early-start';
import { Prestarted } from '../../src/start/prestarted';
import { tempDir } from '../helpers/app';

/** Whether the camera reports itself connected within 10 s (its source delivers frames on its own thread). */
async function connects(camera: { connected(): boolean }): Promise<boolean> {
  for (const end = Date.now() + 10_000; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) {
    if (camera.connected()) return true;
  }
  return false;
}

function iniFile(lines: string[]): string {
  const file = path.join(tempDir(), 'face-check.ini');
  fs.writeFileSync(file, lines.join('\n'));
  return file;
}

t.test('serve starts the engine early; the start takes it once, a later start gets a new one', async (t) => {
  const ini = iniFile(['[server]', 'mode = cloud', '[storage]', `path = ${path.join(tempDir(), 'db')}`]);
  beginEarlyServe(['serve', '--config', ini]);
  t.same(earlyStartWaiting(), { engine: true, camera: false }, 'no camera in cloud mode');
  const first = engineForStart();
  t.same(earlyStartWaiting(), { engine: false, camera: false }, 'handed out once');
  const second = engineForStart();
  t.not(first, second, 'a second start gets its own engine');
  const [a, b] = await Promise.all([first, second]);
  t.not(a, b);
  t.equal(a.modelId, templateModelId(), 'the default engine, as the start would make it');
  t.equal(b.modelId, templateModelId());
  await Promise.all([a.close(), b.close()]);
});

t.test("a device's camera opens early for its configuration; another configuration gets its own", async (t) => {
  const lines = (camera: string[] = []) => ['[server]', 'mode = device', '[storage]', `path = ${path.join(tempDir(), 'db')}`,
    '[licence]', 'development = true', '[camera]', 'source = synthetic', ...camera, '[camera.synthetic]', 'scenario = none'];
  const ini = iniFile(lines());
  beginEarlyServe(['serve', '--config', ini]);
  t.same(earlyStartWaiting(), { engine: true, camera: true });
  const config = configOf(parseArgs(['serve', '--config', ini]));
  const camera = await cameraForStart(config);
  t.equal(earlyStartWaiting().camera, false, 'handed out once');
  t.ok(await connects(camera), 'the synthetic camera runs');
  await camera.close();
  await (await engineForStart()).close();

  beginEarlyServe(['serve', '--config', ini]);
  const other = configOf(parseArgs(['serve', '--config', iniFile(lines(['idle_detect_fps = 2']))]));
  const own = await cameraForStart(other);
  t.equal(earlyStartWaiting().camera, false, 'the early camera, of another configuration, is not kept waiting');
  t.ok(await connects(own), 'its own camera runs, the early one closed beside it');
  await own.close();
  await (await engineForStart()).close();
});

t.test('other commands, --help and a bad ini start nothing', async (t) => {
  const ini = iniFile(['[server]', 'mode = cloud']);
  for (const argv of [['accounts', 'list', '--config', ini], ['serve', '--help'], ['serve', '--config', iniFile(['[server]', 'mode = nonsense'])],
    ['serve', '--config', path.join(tempDir(), 'missing.ini')]]) {
    beginEarlyServe(argv);
    t.same(earlyStartWaiting(), { engine: false, camera: false }, argv.join(' '));
  }
});

t.test('Prestarted: begun once, taken once, another key made anew and the early one released', async (t) => {
  const made: string[] = [];
  const released: string[] = [];
  const held = new Prestarted<string>();
  const make = (v: string) => async () => { made.push(v); return v; };
  const release = async (v: string) => { released.push(v); };
  held.begin('a', make('early'));
  held.begin('a', make('twice'));
  t.same(made, ['early'], 'a second begin makes nothing');
  t.equal(await held.take('a', make('new'), release), 'early');
  t.equal(await held.take('a', make('new'), release), 'new', 'handed out once');
  held.begin('a', make('early-a'));
  t.equal(await held.take('b', make('for-b'), release), 'for-b');
  await new Promise((r) => setImmediate(r));
  t.same(released, ['early-a'], 'the one begun for another key is released');
  const failing = new Prestarted<string>();
  failing.begin('a', async () => { throw new Error('no models'); });
  await t.rejects(failing.take('a', make('x'), release), /no models/, 'a failure reaches the start that takes it');
});
