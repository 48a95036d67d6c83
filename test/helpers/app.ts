// Builds the application on a temporary LMDB folder with a known bootstrap key, for app.inject tests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp, type AppDeps } from '../../src/http/app';
import { defaultConfig } from '../../src/config/load';
import type { Config } from '../../src/config/types';
import type { FaceEngine } from '../../src/engine/types';
import { Galleries } from '../../src/matching/galleries';
import { LocalGalleryFeed } from '../../src/matching/local-gallery-feed';
import { snapshotPlaceOf } from '../../src/matching/snapshot/place';
import { lmdbAsyncStore } from '../../src/storage/lmdb/async-store';
import { openStore, type Store } from '../../src/storage/lmdb/store';
import { FakeEngine } from './fake-engine';
import { testErrorCatalog } from './errors';

export const BOOTSTRAP_KEY = 'test-bootstrap-key-0123456789';

export interface TestApp {
  app: FastifyInstance;
  store: Store;
  engine: FaceEngine;
  config: Config;
  dir: string;
  /** inject with the bootstrap Api-Key and JSON content type unless overridden. */
  call(opts: InjectOptions & { key?: string | null }): Promise<LightMyRequestResponse>;
  /** Closes the app and the store (not the engine), keeping the folder. */
  stop(): Promise<void>;
  /** stop() and delete the folder. */
  close(): Promise<void>;
}

export interface TestAppOptions {
  engine?: FaceEngine;
  dir?: string;
  tune?: (c: Config) => void;
  deps?: Partial<AppDeps>;
}

/**
 * An LMDB store's galleries as the start builds them (from their snapshots with [index] snapshot, else from
 * the store) and the feed that applies the store's commits to them.
 */
export async function lmdbGalleries(store: Store, modelId: string, config: Config):
  Promise<{ galleries: Galleries; galleryFeed: LocalGalleryFeed }> {
  const galleries = Galleries.forStore(store.persons);
  await galleries.restore(store.persons, modelId, config.index.snapshot ? snapshotPlaceOf(store) : undefined);
  return { galleries, galleryFeed: new LocalGalleryFeed(galleries, store.persons, modelId) };
}

export function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-test-'));
}

export async function startTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const dir = opts.dir ?? tempDir();
  const config = defaultConfig(dir);
  config.storage.path = path.join(dir, 'db');
  config.auth.bootstrap_key = BOOTSTRAP_KEY;
  opts.tune?.(config);
  const store = await openStore(config.storage.path);
  const engine = opts.engine ?? new FakeEngine();
  const own = await lmdbGalleries(store, engine.modelId, config);
  const app = await buildApp({ config, engine, store: lmdbAsyncStore(store), errors: testErrorCatalog(), ...own, ...opts.deps });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await app.close();
    own.galleries.close();
    await store.close();
  };
  return {
    app, store, engine, config, dir,
    call: ({ key, headers, ...rest }) => {
      const h: Record<string, string> = {};
      if (key !== null) h['api-key'] = key ?? BOOTSTRAP_KEY;
      if (rest.payload !== undefined && typeof rest.payload === 'object') h['content-type'] = 'application/json';
      return app.inject({ ...rest, headers: { ...h, ...(headers as Record<string, string> | undefined) } });
    },
    stop,
    close: async () => {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
