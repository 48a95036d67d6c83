// The store's memory map: advised random (LMDB's noReadAhead) for the usual scattered reads, normal while
// the segments are scanned (the galleries' rebuild) and again random after, whether the scan finished or
// stopped early; a store opened for bulk reads (face-check migrate) keeps the default advice. Read from
// the kernel's own account of the mapping (/proc/self/smaps: the `rr` flag is MADV_RANDOM).
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';

import { openStore } from '../../src/storage/lmdb/store';
import { tempDir } from '../helpers/app';
import { FAKE_MODEL_ID, templateFor } from '../helpers/fake-engine';

const NOW = '2024-01-01T00:00:00.000Z';

/** VmFlags of every mapping of `file` in this process. */
function mapFlags(file: string): string[][] {
  const ino = fs.statSync(file).ino;
  const out: string[][] = [];
  let current = false;
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ (\d+)/.exec(line);
    if (head) current = Number(head[1]) === ino;
    else if (current && line.startsWith('VmFlags:')) out.push(line.slice(8).trim().split(/\s+/));
  }
  return out;
}
/** 'random' when every mapping of the file is advised MADV_RANDOM, 'default' when none is. */
function advice(file: string): string {
  const flags = mapFlags(file);
  if (flags.length === 0) return 'not mapped';
  const rr = flags.filter((f) => f.includes('rr')).length;
  return rr === flags.length ? 'random' : rr === 0 ? 'default' : `${rr} of ${flags.length} mappings random`;
}

t.test('random advice except while the segments are scanned', { skip: !fs.existsSync('/proc/self/smaps') && 'no /proc/self/smaps' }, async (t) => {
  const dir = tempDir();
  const store = await openStore(dir);
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  const data = path.join(dir, 'data.mdb');
  await store.persons.createMany('a', Array.from({ length: 70 }, (_, i) => ({
    personId: `p${i}`, modelId: FAKE_MODEL_ID, template: templateFor(i, 0, 1), referenceImage: Buffer.from('image'),
  })), NOW);
  t.equal(advice(data), 'random', 'advised random once open');

  const scan = store.persons.templateBlocks(FAKE_MODEL_ID);
  const first = scan.next();
  t.notOk(first.done, 'a block read');
  t.equal(advice(data), 'default', 'normal advice during a scan');
  const second = store.persons.templateBlocks(FAKE_MODEL_ID, 'a');
  second.next();
  second.return(undefined);
  t.equal(advice(data), 'default', 'another scan that stops early does not end the first one\'s advice');
  let blocks = 1;
  for (const block of { [Symbol.iterator]: () => scan }) blocks += block.ids.length > 0 ? 1 : 0;
  t.ok(blocks >= 2, `the scan read ${blocks} blocks`);
  t.equal(advice(data), 'random', 'random again once the scan finished');

  const stopped = store.persons.templateBlocks(FAKE_MODEL_ID);
  stopped.next();
  stopped.return(undefined);
  t.equal(advice(data), 'random', 'and once a scan stopped early');
  t.equal(store.persons.templatesOf('a', ['p3'])[0]?.length, templateFor(3, 0, 1).length, 'reads work under random advice');
});

t.test('a store opened for bulk reads keeps the default advice', { skip: !fs.existsSync('/proc/self/smaps') && 'no /proc/self/smaps' }, async (t) => {
  const dir = tempDir();
  const store = await openStore(dir, { bulkReads: true });
  t.teardown(async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); });
  t.equal(advice(path.join(dir, 'data.mdb')), 'default');
});
