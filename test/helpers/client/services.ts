// Real face-check processes for the client's tests: the service's own start-up (store, HTTP, auth, signing,
// quota, licence, camera) with the fake engine (service-main.ts), on a loopback port, in a temporary folder.
import fs from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import { BOOTSTRAP_KEY, tempDir } from '../app';
import { spawnListening } from '../spawn-listening';
import { generateRsaKeyPair } from '../../../src/storage/records';
import { openStore } from '../../../src/storage/lmdb/store';

const repoRoot = path.resolve(__dirname, '..', '..', '..');

export interface ClientTestService {
  baseUrl: string;
  dir: string;
  apiKey: string;
  /** A key of role enrol (create, update, remove, get): identify is 403 for it. */
  enrolKey: string;
  /** An enterprise key: its signing key (private, PEM) and the service's public key. */
  signing: { apiKey: string; signingKey: string; servicePublicKey: string };
  /** The gate of HELD_IDENTITY's analyses: open() lets them finish, close() holds the next ones. */
  gate: { open(): void; close(): void };
  output(): string;
}

/**
 * Starts a service with these ini lines (a [server] section with its mode, any other section but [storage]
 * and [auth]); stopped at the test's end. Engine 'fake': service-main.ts; 'real': `face-check serve` (dist/).
 */
export async function startClientTestService(t: Test, iniLines: string[], engine: 'fake' | 'real' = 'fake'): Promise<ClientTestService> {
  const dir = tempDir();
  const gateFile = path.join(dir, 'gate-open');
  const store = await openStore(path.join(dir, 'store'));
  const pair = await generateRsaKeyPair();
  const now = new Date().toISOString();
  const signing = await store.apiKeys.create('default', 'full', 'enterprise', now, pair.publicKey);
  const enrol = await store.apiKeys.create('default', 'enrol', 'enrol only', now);
  const servicePublicKey = (await store.serviceKeys.responseSigning()).publicKey;
  await store.close();
  const ini = path.join(dir, 'face-check.ini');
  fs.writeFileSync(ini, iniLines.join('\n').replace('[server]', '[server]\nhost = 127.0.0.1\nport = 0')
    + `\n[storage]\npath = ./store\n[auth]\nbootstrap_key = ${BOOTSTRAP_KEY}\n`);
  const args = engine === 'real'
    ? [path.join(repoRoot, 'bin', 'face-check.js'), 'serve', '--config', ini]
    : [...process.execArgv, path.join(__dirname, 'service-main.ts'), ini];
  const child = await spawnListening(process.execPath, args, {
    cwd: repoRoot, timeoutMs: 90_000, env: { ...process.env, CLIENT_TEST_GATE: gateFile },
  });
  t.teardown(async () => {
    fs.writeFileSync(gateFile, '');
    child.child.kill('SIGTERM');
    await child.exited;
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return {
    baseUrl: child.address, dir, apiKey: BOOTSTRAP_KEY, enrolKey: enrol.key,
    signing: { apiKey: signing.key, signingKey: pair.privateKey, servicePublicKey },
    gate: { open: () => fs.writeFileSync(gateFile, ''), close: () => fs.rmSync(gateFile, { force: true }) },
    output: child.output,
  };
}
