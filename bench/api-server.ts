// The service under load for bench:api, in its own process: a temporary LMDB store pre-filled with N
// persons (random unit templates of the engine's model, written straight to the store), then the real
// service on 127.0.0.1 and, on a second port of the same process, a fastify route returning a constant
// (the HTTP ceiling). Prints one JSON line with both ports, then serves until killed. On the second port,
// POST /stages/every makes every analysis run every engine stage (what each operation ran before it ran only
// its own, services/operation-stages.ts) and POST /stages/operation returns to each operation's own stages.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';

import { defaultConfig } from '../src/config/load';
import { createEngine } from '../src/engine';
import type { AnalyzeOptions, FaceEngine, RgbImage } from '../src/engine/types';
import { ALL_STAGES, stageOptions } from '../src/services/operation-stages';
import { startService } from '../src/start/start-service';
import { generateRsaKeyPair } from '../src/storage/records';
import { openStore } from '../src/storage/lmdb/store';

export const BENCH_KEY = 'bench-api-key-0123456789abcdef';

function randomUnit(dim: number): Float32Array {
  const v = new Float32Array(dim);
  let n = 0;
  for (let i = 0; i < dim; i++) {
    // Box-Muller: isotropic directions, like unrelated faces' templates.
    const g = Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random());
    v[i] = g;
    n += g * g;
  }
  const inv = 1 / Math.sqrt(n);
  for (let i = 0; i < dim; i++) v[i] *= inv;
  return v;
}

async function main() {
  const persons = Number(process.argv[2] ?? 10000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-bench-api-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  const config = defaultConfig(dir);
  config.storage.path = path.join(dir, 'db');
  config.server.port = 0;
  config.auth.bootstrap_key = BENCH_KEY;
  const engine = await createEngine();

  const store = await openStore(config.storage.path);
  const image = crypto.randomBytes(64);
  const now = new Date().toISOString();
  await store.persons.createMany('default', Array.from({ length: persons }, (_, i) => ({
    personId: `synthetic-${i}`, modelId: engine.modelId, template: randomUnit(engine.templateSize), referenceImage: image,
  })), now);
  // A second key of the same account that signs its requests (spec 5), for the signed-identify run.
  const signing = await generateRsaKeyPair();
  const { key: signedKey } = await store.apiKeys.create('default', 'full', 'bench signed', now, signing.publicKey);
  await store.close();

  const stages = { every: false };
  const every = stageOptions(ALL_STAGES);
  const staged = (options?: AnalyzeOptions): AnalyzeOptions => (stages.every ? { ...every, maxFaces: options?.maxFaces } : options ?? {});
  const switchable: FaceEngine = {
    get modelId() { return engine.modelId; },
    get templateSize() { return engine.templateSize; },
    get pending() { return engine.pending; },
    analyze: (image: RgbImage, options?: AnalyzeOptions) => engine.analyze(image, staged(options)),
    profile: (image: RgbImage, options?: AnalyzeOptions) => engine.profile(image, staged(options)),
    close: () => engine.close(),
  };
  const service = await startService(config, { engine: switchable, logger: false, print: () => undefined });
  const ceiling = Fastify({ logger: false });
  ceiling.get('/constant', async () => ({ ok: true }));
  ceiling.post('/stages/every', async () => { stages.every = true; return stages; });
  ceiling.post('/stages/operation', async () => { stages.every = false; return stages; });
  const ceilingAddress = await ceiling.listen({ host: '127.0.0.1', port: 0 });
  console.log(JSON.stringify({ service: service.address, ceiling: ceilingAddress, persons, signedKey, signingKey: signing.privateKey }));
  const stop = async () => { await ceiling.close(); await service.close(); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => { console.error(e); process.exit(1); });
