// What starting and stopping a serving process needs whichever backend it runs on: the first API key, the
// journal check, the drain of in-flight requests and the engine's close once idle.
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { LiveFaceSource } from '../device/live-face-source';
import type { ErrorCatalog } from '../errors';
import type { FaceEngine } from '../engine/types';
import { DEFAULT_ACCOUNT } from '../services/auth';
import { writeKeyFileAtomically } from '../storage/crypto/key-file';
import type { AsyncStore } from '../storage/interfaces';

export interface RunningService {
  app: FastifyInstance;
  store: AsyncStore;
  engine: FaceEngine;
  /** The address the server listens on, e.g. http://127.0.0.1:8080. */
  address: string;
  close(): Promise<void>;
}

export interface StartOptions {
  engine?: FaceEngine;
  errors?: ErrorCatalog;
  camera?: LiveFaceSource;
  logger?: FastifyServerOptions['logger'];
  /** Where the one-time messages go (the first API key). */
  print?: (line: string) => void;
}

/** The lock the first key is made under (no account id holds a control character). */
const FIRST_KEY_LOCK = '\u0001first-api-key';

/** Where the first API key is written when the program runs under a service manager (see ensureFirstKey). */
export const FIRST_KEY_FILE = 'first-api-key.txt';

/**
 * True when stdout is systemd's journal: JOURNAL_STREAM names the journal's stream as device:inode, and
 * only counts when stdout is that very stream (a child whose stdout is a pipe inherits the variable).
 */
export function stdoutIsJournal(env: NodeJS.ProcessEnv = process.env): boolean {
  const [dev, ino] = (env.JOURNAL_STREAM ?? '').split(':');
  if (!dev || !ino) return false;
  try {
    const st = fs.fstatSync(1);
    return String(st.dev) === dev && String(st.ino) === ino;
  } catch {
    return false;
  }
}

/**
 * On first start (no key ever stored) creates a full-access key of account "default" and shows it once. When
 * stdout is the journal, which keeps every line, the key goes to <storage path>/first-api-key.txt instead
 * (0600, in `folder`: [storage] path, the 0700 store folder with LMDB) and only that path is printed.
 */
export async function ensureFirstKey(store: AsyncStore, folder: string, print: (line: string) => void, now = new Date(),
  toJournal = stdoutIsJournal()): Promise<string | undefined> {
  // Under one lock: nodes of a new cluster starting together make one first key, not one each.
  const made = await store.exclusive(FIRST_KEY_LOCK, async () => {
    if (!await store.apiKeys.isEmpty()) return undefined;
    return store.apiKeys.create(DEFAULT_ACCOUNT, 'full', 'first start', now.toISOString());
  });
  if (!made) return undefined;
  const { key, record } = made;
  print(`face-check: first start - created API key ${record.keyId} (account ${record.accountId}, role ${record.role}).`);
  if (toJournal) {
    const file = path.join(folder, FIRST_KEY_FILE);
    writeKeyFileAtomically(file, Buffer.from(`Api-Key: ${key}\n`, 'utf8'));
    print(`face-check: stdout is the journal, which keeps every line: the key is in ${file} (0600);`);
    print('face-check: store it, then delete that file (face-check keys create makes more).');
  } else {
    print(`face-check: Api-Key: ${key}`);
    print('face-check: it is shown only this once; store it now (face-check keys create makes more).');
  }
  return key;
}

/**
 * Closes the engine once its last analysis has finished: a client that hung up leaves its analysis
 * running after the HTTP server has closed, and the engine refuses to close under it. Bounded (30 s).
 */
export async function closeWhenIdle(engine: FaceEngine): Promise<void> {
  for (let waited = 0; ; waited += 50) {
    try {
      await engine.close();
      return;
    } catch (err) {
      if ((err as { status?: string }).status !== 'ServiceUnavailable' || waited >= 30_000) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * Stops accepting connections and lets in-flight requests finish ([server] drain_timeout_ms at most; new
 * requests on open connections get 503 meanwhile, http/plugins/overload.ts). Past the bound the remaining
 * connections are cut.
 */
export async function drain(app: FastifyInstance, timeoutMs: number): Promise<void> {
  const closing = app.close();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(true), timeoutMs); });
  const timedOut = await Promise.race([closing.then(() => false), expired]);
  clearTimeout(timer);
  if (timedOut) {
    app.log.warn({ drain_timeout_ms: timeoutMs }, 'requests still running after the drain timeout: closing their connections');
    app.server.closeAllConnections();
    await closing;
  }
}
