// Graceful drain of the real program (`node bin/face-check.js serve`, cloud mode, no camera): on SIGTERM it
// stops accepting connections, lets the request in flight finish, closes engine and store and exits 0;
// [server] drain_timeout_ms bounds the wait; a second signal exits at once.
import type { ChildProcess } from 'node:child_process';
import { spawnListening } from '../helpers/spawn-listening';
import { connectRefused, heldRecognition } from '../helpers/held-request';
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { BOOTSTRAP_KEY, tempDir } from '../helpers/app';
import { repoRoot } from '../helpers/errors';

const built = fs.existsSync(path.join(repoRoot, 'dist', 'src', 'cli', 'main.js'));

interface Program {
  child: ChildProcess;
  port: number;
  output(): string;
  exited: Promise<number | null>;
}

async function startProgram(t: Test, drainMs: number): Promise<Program> {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = path.join(dir, 'face-check.ini');
  fs.writeFileSync(ini, ['[server]', 'mode = cloud', 'host = 127.0.0.1', 'port = 0', `drain_timeout_ms = ${drainMs}`,
    '[storage]', 'path = ./store', '[auth]', `bootstrap_key = ${BOOTSTRAP_KEY}`, '[camera]', 'source = none', ''].join('\n'));
  const { child, port, output, exited } = await spawnListening(process.execPath,
    [path.join(repoRoot, 'bin', 'face-check.js'), 'serve', '--config', ini], { cwd: dir });
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  return { child, port, output, exited };
}

const skip = built ? false : 'dist/ not built (npm run build:ts)';

t.test('SIGTERM: no new connections, the request in flight completes, exit 0', { skip }, async (t) => {
  const p = await startProgram(t, 10_000);
  const held = heldRecognition(p.port, JSON.stringify({ faceImage: 'QUJD' }));
  await held.start();
  p.child.kill('SIGTERM');
  // The listener closes at once; the held connection stays.
  let refused = false;
  for (let i = 0; i < 50 && !refused; i++) {
    refused = await connectRefused(p.port);
    if (!refused) await new Promise((r) => setTimeout(r, 20));
  }
  t.ok(refused, 'new connections are refused while draining');
  t.equal(p.child.exitCode, null, 'still running while a request is in flight');
  held.finish();
  await held.closed;
  t.match(held.answer(), /^HTTP\/1\.1 400 /, 'the in-flight request was answered');
  t.match(held.answer(), /\r\nrequest-id: [0-9a-f-]{36}\r\n/i);
  t.match(held.answer(), /\{"code":"R_003","message":"Fields validation exception"\}$/);
  t.equal(await p.exited, 0, 'exit code 0');
  t.match(p.output(), /stopping: draining requests/);
});

t.test('SIGTERM: a request that never completes is cut at [server] drain_timeout_ms, then exit 0', { skip }, async (t) => {
  const p = await startProgram(t, 500);
  const held = heldRecognition(p.port, JSON.stringify({ faceImage: 'QUJD' }));
  await held.start();
  p.child.kill('SIGTERM');
  await held.closed;
  t.equal(await p.exited, 0);
  t.match(p.output(), /still running after the drain timeout/);
});

t.test('a second SIGTERM exits at once, without waiting for the drain', { skip }, async (t) => {
  const p = await startProgram(t, 120_000);
  const held = heldRecognition(p.port, JSON.stringify({ faceImage: 'QUJD' }));
  await held.start();
  p.child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 300));
  t.equal(p.child.exitCode, null, 'draining: the request in flight holds the exit');
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 1, 'the second signal exits with 1');
  t.match(p.output(), /SIGTERM while stopping: exiting now/);
  await held.closed;
});
