// Analyses run at the process's own scheduling priority: no thread of the service lowers itself for an
// analysis, so beside other busy processes (a kiosk's UI) the service keeps its fair share of the CPU
// (bench:contention measures it). Read from /proc: Linux keeps a niceness per thread.
import fs from 'node:fs';
import os from 'node:os';
import sharp from 'sharp';
import t from 'tap';

import { realEngine } from '../helpers/engine';
import { groupPhoto, photosSkip } from '../helpers/photos';

/** Niceness of every thread of this process (field 19 of /proc/self/task/<tid>/stat). */
function threadNiceness(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // The name (field 2) may hold spaces: count fields after its closing parenthesis.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const comm = fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
      out.set(`${tid} ${comm}`, Number(fields[16]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

t.test('analysis threads keep the process\'s niceness', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const { engine, skip } = await realEngine();
  const photos = photosSkip();
  if (!engine || photos) return t.plan(0, `${skip || photos}`);
  t.teardown(() => engine.close());
  const { data, info } = await sharp(groupPhoto(3)).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const image = { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
  const processNice = os.getPriority(0);
  // As many analyses at once as libuv has pool threads, a few rounds, so every pool thread has run one.
  const pool = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  for (let round = 0; round < 3; round++) await Promise.all(Array.from({ length: pool }, () => engine.analyze(image)));
  const lowered = [...threadNiceness()].filter(([, nice]) => nice !== processNice);
  t.same(lowered, [], `every thread at niceness ${processNice}`);
});
