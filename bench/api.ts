// npm run bench:api — identify and verify over HTTP at 50 concurrent clients (BENCH_API_CONNECTIONS) against a service holding
// 10,000 enrolled persons, with a fastify route returning a constant measured in the same run as the
// ceiling. The service runs in a child process (bench/api-server.ts); autocannon drives it from here.
// Each operation runs twice side by side: with its own engine stages (services/operation-stages.ts) and with
// every stage (eye and colour-liveness models, quality measures, every face's landmarks), and the engine's
// own time per analysis is compared the same way in this process, for the saving per operation.
// Compare takes two analyses a request, so it runs at half the connections: the same analyses in flight,
// within the overload bound ([server] max_engine_queue), which answers 503 past it.
// Targets: identify >= 150 requests/s at 50 connections on the 2-core machine with 10,000 persons, p99
// reported, no 5xx (a 503 of the overload bound counts as a failure here).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import readline from 'node:readline';

import { createEngine } from '../src/engine';
import { packageRoot } from '../src/package-root';
import { ALL_STAGES, OPERATION_STAGES, operationOptions, stageOptions, type Operation } from '../src/services/operation-stages';
import { percentile, printJsonLine } from './common';
import { faceCrops } from './face-crops';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon');

const PERSONS = Number(process.env.BENCH_API_PERSONS ?? 10000);
const SECONDS = Number(process.env.BENCH_API_SECONDS ?? 15);
const CONNECTIONS = Number(process.env.BENCH_API_CONNECTIONS ?? 50);
const KEY = 'bench-api-key-0123456789abcdef';

/** A JPEG of one face (about 480 px), cut from a face-api demo photo: what a gate camera would send. */
async function facePhoto(): Promise<Buffer> {
  return (await faceCrops(3, 1))[0];
}

interface Run { requestsPerSecond: number; p50: number; p99: number; requests: number; non2xx: number; errors: number }

/** Requests still queued in the service when a run ends are answered before the next run starts. */
const drained = () => new Promise((resolve) => setTimeout(resolve, 3000));

/** `analyses`: the engine analyses one request takes (compare: two), so every run keeps as many in flight. */
async function load(url: string, method: 'GET' | 'POST', body?: string, analyses = 1): Promise<Run> {
  const result = await autocannon({
    url, method, body, connections: Math.max(1, Math.floor(CONNECTIONS / analyses)), duration: SECONDS,
    headers: { 'Api-Key': KEY, 'Content-Type': 'application/json' },
  });
  await drained();
  return {
    requestsPerSecond: +(result.requests.total / SECONDS).toFixed(1), p50: result.latency.p50, p99: result.latency.p99,
    requests: result.requests.total, non2xx: result.non2xx, errors: result.errors,
  };
}

/** Identify with a key that signs its requests. The requests are signed before the run (a query counter
 *  keeps the signatures distinct: a repeated signature is a replay), so the client's RSA work does not take
 *  CPU from the service during the measurement; what is measured is the service's side. */
async function loadSigned(service: string, body: string, apiKey: string, signingKey: string): Promise<Run> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signed = Array.from({ length: 4000 }, (_, n) => {
    const path = `/person/recognize-face?n=${n}`;
    const signature = crypto.sign('sha256', Buffer.from(`${service}${path}${body}${timestamp}`), signingKey).toString('base64');
    return { path, headers: { 'Api-Key': apiKey, 'Content-Type': 'application/json', Signature: signature, Timestamp: timestamp } };
  });
  let next = 0;
  const result = await autocannon({
    url: service, connections: CONNECTIONS, duration: SECONDS,
    requests: [{
      method: 'POST', body,
      setupRequest: (req: Record<string, unknown>) => {
        if (next >= signed.length) throw new Error('bench:api: more signed requests needed');
        return { ...req, ...signed[next++] };
      },
    }],
  });
  return {
    requestsPerSecond: +(result.requests.total / SECONDS).toFixed(1), p50: result.latency.p50, p99: result.latency.p99,
    requests: result.requests.total, non2xx: result.non2xx, errors: result.errors,
  };
}

const ENGINE_ROUNDS = Number(process.env.BENCH_API_ENGINE_ROUNDS ?? 100);

/** Engine time per analysis (ms p50) of each operation's stages against every stage, interleaved. */
async function engineStages(jpeg: Buffer): Promise<Record<string, { stages: string; p50: number; everyStageP50: number; saving: number }>> {
  const sharp = (await import('sharp')).default;
  const { data, info } = await sharp(jpeg).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const image = { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
  const engine = await createEngine();
  const ops: Operation[] = ['identify', 'verify', 'compare', 'create', 'update'];
  const every = stageOptions(ALL_STAGES);
  const times = new Map<string, { own: number[]; every: number[] }>(ops.map((op) => [op, { own: [], every: [] }]));
  const timed = async (options: object) => (await engine.profile(image, options)).timings.total;
  for (let i = 0; i < 5; i++) await timed(every);
  for (let i = 0; i < ENGINE_ROUNDS; i++) {
    for (const op of ops) {
      times.get(op)!.own.push(await timed(operationOptions(op)));
      times.get(op)!.every.push(await timed(every));
    }
  }
  await engine.close();
  return Object.fromEntries(ops.map((op) => {
    const t = times.get(op)!;
    const p50 = percentile(t.own, 50), everyStageP50 = percentile(t.every, 50);
    return [op, { stages: ['detect', 'landmarks', ...OPERATION_STAGES[op]].join('+'), p50: +p50.toFixed(2),
      everyStageP50: +everyStageP50.toFixed(2), saving: +(1 - p50 / everyStageP50).toFixed(3) }];
  }));
}

async function main() {
  const jpeg = await facePhoto();
  const engineTimes = await engineStages(jpeg);
  const server = spawn(process.execPath, [path.join(packageRoot(), 'dist', 'bench', 'api-server.js'), String(PERSONS)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const started = Date.now();
  const ready = await new Promise<{ service: string; ceiling: string; signedKey: string; signingKey: string }>((resolve, reject) => {
    readline.createInterface({ input: server.stdout }).once('line', (line) => resolve(JSON.parse(line)));
    server.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  console.log(`service with ${PERSONS} persons ready in ${((Date.now() - started) / 1000).toFixed(1)} s at ${ready.service}`);
  try {
    const faceImage = jpeg.toString('base64');
    const enrol = await fetch(`${ready.service}/person/face/gate-user`, {
      method: 'POST', headers: { 'Api-Key': KEY, 'Content-Type': 'application/json' }, body: JSON.stringify({ faceImage }),
    });
    if (enrol.status !== 200) throw new Error(`enrolment failed: ${enrol.status} ${await enrol.text()}`);
    const body = JSON.stringify({ faceImage });
    const probe = await fetch(`${ready.service}/person/recognize-face`, { method: 'POST', headers: { 'Api-Key': KEY, 'Content-Type': 'application/json' }, body });
    const who = (await probe.json()) as { personId?: string };
    if (who.personId !== 'gate-user') throw new Error(`identify did not find the enrolled person: ${JSON.stringify(who)}`);

    // Interleaved blocks, ceiling first and last, so machine noise falls on all alike.
    const stages = (mode: 'every' | 'operation') => fetch(`${ready.ceiling}/stages/${mode}`, { method: 'POST' });
    /** The operation with its own stages, then with every stage. */
    const both = async (url: string, payload: string, analyses = 1): Promise<[Run, Run]> => {
      const own = await load(url, 'POST', payload, analyses);
      await stages('every');
      const every = await load(url, 'POST', payload, analyses);
      await stages('operation');
      return [own, every];
    };
    const compareBody = JSON.stringify({ targetImage: faceImage, sourceImage: faceImage });
    const constant = await load(`${ready.ceiling}/constant`, 'GET');
    const [identify, identifyEveryStage] = await both(`${ready.service}/person/recognize-face`, body);
    const [verify, verifyEveryStage] = await both(`${ready.service}/person/verify-face/gate-user`, body);
    const [compare, compareEveryStage] = await both(`${ready.service}/person/compare-face`, compareBody, 2);
    const runs = {
      constant, identify, identifyEveryStage, verify, verifyEveryStage, compare, compareEveryStage,
      identifySigned: await loadSigned(ready.service, body, ready.signedKey, ready.signingKey),
    };
    console.log(`\n${CONNECTIONS} connections, ${SECONDS} s each, ${PERSONS + 1} enrolled persons, ${jpeg.length}-byte JPEG`);
    console.log('route                      req/s     p50 ms   p99 ms   p99/p50   non-2xx');
    for (const [name, r] of Object.entries(runs)) {
      console.log(`${name.padEnd(24)} ${String(r.requestsPerSecond).padStart(8)} ${String(r.p50).padStart(9)} ${String(r.p99).padStart(8)} ` +
        `${(r.p99 / Math.max(1, r.p50)).toFixed(2).padStart(8)} ${String(r.non2xx).padStart(8)}`);
    }
    console.log('\nengine time per analysis (this photo, one at a time), own stages against every stage:');
    for (const [op, e] of Object.entries(engineTimes)) {
      console.log(`${op.padEnd(10)} ${e.stages.padEnd(36)} p50 ${e.p50} ms, every stage ${e.everyStageP50} ms: ${(e.saving * 100).toFixed(1)} % saved`);
    }
    const rate = (own: Run, every: Run) => +(own.requestsPerSecond / Math.max(0.1, every.requestsPerSecond)).toFixed(2);
    const savings = {
      identifyRateOverEveryStage: rate(identify, identifyEveryStage),
      verifyRateOverEveryStage: rate(verify, verifyEveryStage),
      compareRateOverEveryStage: rate(compare, compareEveryStage),
    };
    console.log(`requests/s with own stages over every stage: identify ${savings.identifyRateOverEveryStage}x, ` +
      `verify ${savings.verifyRateOverEveryStage}x, compare ${savings.compareRateOverEveryStage}x`);
    const targets = {
      identifyAtLeast150: runs.identify.requestsPerSecond >= 150,
      identifyNoFailure: runs.identify.non2xx === 0 && runs.identify.errors === 0,
      identifyP99Within3xP50: runs.identify.p99 <= 3 * runs.identify.p50,
    };
    const met = (ok: boolean) => (ok ? 'MET' : 'NOT MET');
    console.log(`targets: identify >= 150 req/s ${met(targets.identifyAtLeast150)}, no failed request ${met(targets.identifyNoFailure)}, ` +
      `p99 <= 3x p50 ${met(targets.identifyP99Within3xP50)}`);
    printJsonLine({ bench: 'api', persons: PERSONS + 1, connections: CONNECTIONS, seconds: SECONDS, jpegBytes: jpeg.length, runs, engineStages: engineTimes, savings, targets });
  } finally {
    server.kill('SIGTERM');
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
