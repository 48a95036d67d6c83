// What `face-check serve` starts before the rest of the program loads (src/ops/early-start.ts): the engine
// (src/engine/early-engine.ts), handed to the start once; nothing for other commands or a bad ini.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { engineForStart, engineLoadingEarly, loadEngineEarly } from '../src/engine/early-engine';
import { templateModelId } from '../src/engine/template-spec';
import { beginEarlyStart } from '../src/ops/early-start';
import { tempDir } from './helpers/app';

function iniFile(lines: string[]): string {
  const file = path.join(tempDir(), 'face-check.ini');
  fs.writeFileSync(file, lines.join('\n'));
  return file;
}

t.test('serve starts the engine early; the start takes it once, a later start gets a new one', async (t) => {
  const ini = iniFile(['[server]', 'mode = cloud', '[storage]', `path = ${path.join(tempDir(), 'db')}`]);
  beginEarlyStart(['serve', '--config', ini]);
  t.equal(engineLoadingEarly(), true);
  const first = engineForStart();
  t.equal(engineLoadingEarly(), false, 'handed out once');
  const second = engineForStart();
  t.not(first, second, 'a second start gets its own engine');
  const [a, b] = await Promise.all([first, second]);
  t.not(a, b);
  t.equal(a.modelId, templateModelId(), 'the default engine, as the start would make it');
  t.equal(b.modelId, templateModelId());
  await Promise.all([a.close(), b.close()]);
});

t.test('loading early twice starts one engine', async (t) => {
  loadEngineEarly();
  loadEngineEarly();
  const engine = engineForStart();
  t.equal(engineLoadingEarly(), false, 'nothing left behind by the second call');
  await (await engine).close();
});

t.test('other commands, --help and a bad ini start nothing', async (t) => {
  const ini = iniFile(['[server]', 'mode = cloud']);
  for (const argv of [['accounts', 'list', '--config', ini], ['serve', '--help'], ['serve', '--config', iniFile(['[server]', 'mode = nonsense'])],
    ['serve', '--config', path.join(tempDir(), 'missing.ini')]]) {
    beginEarlyStart(argv);
    t.equal(engineLoadingEarly(), false, argv.join(' '));
  }
});
