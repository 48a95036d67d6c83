// Starting and stopping one cloud node over the shared PostgreSQL database ([storage] backend = postgres):
// the store opened once (schema brought up to date, data key unwrapped), the galleries built from the
// persons table and then following the change log, the first API key (made once for the whole cluster),
// the HTTP listener. An unreachable database fails the start within [storage] postgres_connect_timeout_ms.
import fs from 'node:fs';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config/types';
import { templateModelId } from './engine/template-spec';
import type { FaceEngine } from './engine/types';
import { ErrorCatalog } from './errors';
import { buildApp } from './http/app';
import { GalleryFollower } from './matching/gallery-follower';
import { nativeErrorTable } from './native';
import { engineForStart } from './ops/early-start';
import { logOptions } from './ops/log-options';
import { closeWhenIdle, drain, ensureFirstKey, type RunningService, type StartOptions } from './ops/service-lifecycle';
import { openBackend, type OpenedBackend } from './storage/open-backend';
import { clusterHousekeeping } from './storage/postgres/cluster-housekeeping';
import type { PostgresStore } from './storage/postgres/store';
import { ThrottleRules } from './licensing/sign-in-throttle';

function followerOf(store: PostgresStore, config: Config, modelId: string, log: () => FastifyBaseLogger | undefined): GalleryFollower {
  return new GalleryFollower(store, {
    modelId,
    // A request waits for the galleries no longer than for a statement: past it, 503 as for the database.
    waitTimeoutMs: config.storage.postgres_statement_timeout_ms,
    onError: (err) => log()?.warn({ err }, 'change follower: retrying'),
  });
}

export async function startCloudNode(config: Config, opts: StartOptions = {}): Promise<RunningService> {
  if (config.server.mode !== 'cloud') throw new Error('[storage] backend = postgres serves cloud mode only');
  const print = opts.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const errors = opts.errors ?? new ErrorCatalog(nativeErrorTable());
  const engineReady = opts.engine ? Promise.resolve(opts.engine) : engineForStart();
  engineReady.catch(() => undefined);  // awaited below or in the clean-up
  let logger: FastifyBaseLogger | undefined;
  let backend: OpenedBackend | undefined;
  let follower: GalleryFollower | undefined;
  let engine: FaceEngine | undefined;
  try {
    backend = await openBackend(config.storage, 'serve');
    if (backend.kind !== 'postgres') throw new Error('startCloudNode needs [storage] backend = postgres');
    const store = backend.store;
    // The galleries build while the engine loads its models (the model id is known from the manifest).
    const expectedModel = opts.engine?.modelId ?? templateModelId();
    follower = followerOf(store, config, expectedModel, () => logger);
    const building = follower.start();
    building.catch(() => undefined);  // awaited below
    engine = await engineReady;
    let counts = await building;
    if (engine.modelId !== expectedModel) {
      await follower.stop();
      follower = followerOf(store, config, engine.modelId, () => logger);
      counts = await follower.start();
    }
    if (counts.stale > 0) {
      print(`face-check: ${counts.stale} person(s) have templates of another model and cannot match until "face-check reindex" runs`);
    }
    // This node's own files (the first key's file under a service manager, packages) stay in [storage] path.
    fs.mkdirSync(config.storage.path, { recursive: true, mode: 0o700 });
    await ensureFirstKey(store, config.storage.path, print);
    const app = await buildApp({
      config, engine, store, errors, galleries: follower.galleries, galleryFeed: follower, camera: opts.camera,
      logger: opts.logger ?? logOptions(config.log.level),
    });
    logger = app.log;
    app.log.info({ persons: counts.loaded, stale: counts.stale, change_position: follower.position }, 'galleries loaded');
    const address = await app.listen({ host: config.server.host, port: config.server.port });
    app.log.info({ mode: config.server.mode, persons: counts.loaded, storage: 'postgres' }, 'face-check ready');
    const openEngine = engine;
    const openFollower = follower;
    const openBackendRef = backend;
    // Change-log pruning and session purges for the cluster: one node at a time does them.
    const housekeeping = clusterHousekeeping(store.pool, config, new ThrottleRules(config.accounts).retentionMs, () => logger);
    housekeeping.start();
    return {
      app, store, engine, address,
      close: async () => {
        await drain(app, config.server.drain_timeout_ms);
        await openFollower.stop();
        await housekeeping.stop();
        await closeWhenIdle(openEngine);
        await openBackendRef.close();
        app.log.info({ camera: 'none' }, 'stopped');
      },
    };
  } catch (err) {
    await follower?.stop().catch(() => undefined);
    await backend?.close().catch(() => undefined);
    if (!opts.engine) await (engine ?? (await engineReady.catch(() => undefined)))?.close().catch(() => undefined);
    throw err;
  }
}
