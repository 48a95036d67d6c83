// `face-check reindex` refuses to run beside a service that holds the store (its galleries would keep the
// old templates), runs once the service has stopped, and a lock left by a killed service does not block.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { main } from '../../src/cli/main';
import { lockStore } from '../../src/storage/lmdb/process-lock';
import { StoreBusyError } from '../../src/storage/errors';
import { tempDir } from '../helpers/app';
import { startServiceProcess, writeIni } from '../helpers/service-process';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) } };
}

t.test('reindex is refused while a service runs on the store, and runs after it stops', async (t) => {
  const dir = tempDir();
  const ini = writeIni(dir);
  const service = await startServiceProcess(ini, 'fake');
  const busy = capture();
  t.equal(await main(['reindex', '--config', ini], busy.io), 75, 'exit code 75 (EX_TEMPFAIL)');
  t.match(busy.err.join('\n'), new RegExp(`in use by face-check serve \\(pid ${service.child.pid} `), 'names the service and its pid');
  t.equal(await service.stop(), 0);
  t.notOk(fs.existsSync(path.join(dir, 'store', 'face-check.lock')), 'a clean stop releases the lock');
  const free = capture();
  t.equal(await main(['reindex', '--config', ini], free.io), 0, free.err.join('\n'));
  t.match(free.out.join('\n'), /0 recomputed, 0 already current, 0 failed/);
});

t.test('a lock left by a killed service is taken over', async (t) => {
  const dir = tempDir();
  const ini = writeIni(dir);
  const first = await startServiceProcess(ini, 'fake');
  await first.kill9();
  t.ok(fs.existsSync(path.join(dir, 'store', 'face-check.lock')), 'SIGKILL leaves the lock file');
  const second = await startServiceProcess(ini, 'fake');
  t.pass('a new service starts on the store of a killed one');
  t.equal(await second.stop(), 0);
});

t.test('the lock is exclusive within a process too, and released by its holder only', async (t) => {
  const dir = tempDir();
  const lock = lockStore(dir, 'serve');
  t.throws(() => lockStore(dir, 'reindex'), StoreBusyError);
  lock.release();
  const again = lockStore(dir, 'reindex');
  t.equal(JSON.parse(fs.readFileSync(again.file, 'utf8')).role, 'reindex');
  t.equal(fs.statSync(again.file).mode & 0o777, 0o600, 'the lock file is 0600');
  again.release();
  t.notOk(fs.existsSync(again.file));
});
