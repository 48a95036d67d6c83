// The application over either storage backend, for contract tests that must hold on both: LMDB in a temporary
// folder (as startTestApp), or PostgreSQL (a fresh database on this test file's server, galleries built and
// fed by the change follower, as a cloud node runs them). One suite, the backend a parameter.
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { defaultConfig } from '../../src/config/load';
import type { Config } from '../../src/config/types';
import type { FaceEngine } from '../../src/engine/types';
import { buildApp, type AppDeps } from '../../src/http/app';
import { postgresGallerySource, type GallerySource } from '../../src/start/gallery-sources';
import { lmdbAsyncStore } from '../../src/storage/lmdb/async-store';
import type { AsyncStore } from '../../src/storage/interfaces';
import { postgresSettings } from '../../src/storage/postgres/pool';
import { openPostgresStore } from '../../src/storage/postgres/store';
import { openStore } from '../../src/storage/lmdb/store';
import type { Galleries } from '../../src/matching/galleries';
import type { GalleryFeed } from '../../src/services/context';
import { BOOTSTRAP_KEY, lmdbGalleries, tempDir } from './app';
import { testErrorCatalog } from './errors';
import { FakeEngine } from './fake-engine';
import { postgresSkipReason, startPostgres, type PostgresServer } from './postgres';

export type Backend = 'lmdb' | 'postgres';
export const BACKENDS: readonly Backend[] = ['lmdb', 'postgres'];

/** Why a backend's tests cannot run here (PostgreSQL absent); throws instead where CI requires PostgreSQL. */
export function backendSkipReason(backend: Backend): string | undefined {
  return backend === 'postgres' ? postgresSkipReason() : undefined;
}

export interface BackendApp {
  backend: Backend;
  app: FastifyInstance;
  store: AsyncStore;
  engine: FaceEngine;
  config: Config;
  /** inject with the bootstrap Api-Key and JSON content type unless overridden. */
  call(opts: InjectOptions & { key?: string | null }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface BackendAppOptions {
  engine?: FaceEngine;
  tune?: (c: Config) => void;
  deps?: Partial<AppDeps>;
}

let server: Promise<PostgresServer> | undefined;
let databases = 0;

/** One PostgreSQL server per test file, started on first use and stopped when the process exits. */
function sharedPostgres(): Promise<PostgresServer> {
  if (!server) {
    server = startPostgres();
    // The harness stops the server at exit; stopping it earlier would cut the other tests' databases.
  }
  return server;
}

export async function startBackendApp(backend: Backend, opts: BackendAppOptions = {}): Promise<BackendApp> {
  const dir = tempDir();
  const config = defaultConfig(dir);
  config.storage.path = path.join(dir, 'db');
  config.auth.bootstrap_key = BOOTSTRAP_KEY;
  opts.tune?.(config);
  const engine = opts.engine ?? new FakeEngine();
  let store: AsyncStore;
  let source: GallerySource | undefined;
  let galleries: Galleries;
  let galleryFeed: GalleryFeed;
  if (backend === 'postgres') {
    const pg = await sharedPostgres();
    const url = await pg.createDatabase(`contract_${process.pid}_${++databases}`);
    store = await openPostgresStore(postgresSettings(url, { poolSize: 4 }), { keyFile: path.join(dir, 'node.key') });
    // As a node runs them (src/start/gallery-sources.ts): with its gallery cache unless `tune` turns it off.
    source = postgresGallerySource(store as Awaited<ReturnType<typeof openPostgresStore>>, config, () => undefined);
    await source.load(engine.modelId);
    galleries = source.galleries;
    galleryFeed = source.feed;
  } else {
    const lmdb = await openStore(config.storage.path);
    ({ galleries, galleryFeed } = await lmdbGalleries(lmdb, engine.modelId, config));
    store = lmdbAsyncStore(lmdb);
  }
  const app = await buildApp({
    config, engine, store, errors: testErrorCatalog(), galleries, galleryFeed,
    ...opts.deps,
  });
  let closed = false;
  return {
    backend, app, store, engine, config,
    call: ({ key, headers, ...rest }) => {
      const h: Record<string, string> = {};
      if (key !== null) h['api-key'] = key ?? BOOTSTRAP_KEY;
      if (rest.payload !== undefined && typeof rest.payload === 'object') h['content-type'] = 'application/json';
      return app.inject({ ...rest, headers: { ...h, ...(headers as Record<string, string> | undefined) } });
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await app.close();
      await source?.stop();
      if (!source) galleries.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
