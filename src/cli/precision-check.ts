// `face-check precision-check [--photo <file>[,<file>...]] [--iterations N] [--format text|json] [--config <file.ini>]`:
// float32 or int8 template networks, decided on the machine that will run them, with the installed package.
// Both engines (one thread each) take the same photos in alternating runs after warm-up runs; the command
// prints photo -> template and its embedding stage (p50 / p95) per precision, their ratio, the lowest cosine
// between the two precisions' templates, whether the CPU has int8 dot-product instructions (/proc/cpuinfo),
// and the precision the rule below picks. Photos: --photo, else the synthetic camera's demo photos when an
// earlier run left them in the cache (nothing is fetched).
// Exit codes: 0 measured; 2 usage (no photo, a bad --iterations or --format); 65 (EX_DATAERR) a photo does not
// decode or shows no face; 66 (EX_NOINPUT) a --photo file cannot be read; 72 (EX_OSFILE) the int8 model file
// is missing (the install makes it) or the manifest lists no int8 form.
import fs from 'node:fs';

import { cachedDemoPhotoPaths } from '../device/demo-photos';
import { percentile } from '../device/pad-metrics';
import { int8DotCapability, type Int8DotCapability } from '../engine/int8-capability';
import {
  comparePrecisions, Int8ModelError, NoFaceError, PRECISIONS, type ComparedPhoto, type PrecisionComparison, type PrecisionRuns,
} from '../engine/precision-comparison';
import type { Precision } from '../engine/template-spec';
import { decodeImageBytes, ImageDecodeError, type ImageLimits } from '../image/decode';
import { operationOptions } from '../services/operation-stages';
import { configOf, stringFlag, UsageError, type Args, type Io } from './args';

export const PRECISION_CHECK_USAGE =
  '  face-check precision-check [--photo <file>[,<file>...]] [--iterations N] [--format text|json] [--config <file.ini>]';

/** Measured runs per precision: the default stays under a minute on a Raspberry Pi 4-class core (docs/engine.md). */
export const ITERATIONS = { default: 40, min: 5, max: 1000 } as const;
/** Unmeasured runs per precision before the measured ones (at least one per photo). */
const WARMUP_RUNS = 5;

/**
 * The rule: int8 only where it pays for what it costs. Switching precision means reindexing every store,
 * int8 lowers TAR at FAR 1e-6 a little (the accuracy guard, measured on x86) and its templates agree less
 * across architectures, so a gain within what a busy board's noise moves (under 1.2x) does not pay; and
 * int8 templates further from float32's than the bound they keep where the guard was measured
 * (test/engine/int8-networks.test.ts) mean this CPU's int8 kernels compute something else.
 */
export const INT8_RULE = { minSpeedup: 1.2, minCosine: 0.95 } as const;

const EX_DATAERR = 65, EX_NOINPUT = 66, EX_OSFILE = 72;

class CheckFailure extends Error {
  constructor(message: string, readonly exitCode: number) {
    super(message);
  }
}

function iterationsOf(args: Args): number {
  const text = stringFlag(args, 'iterations');
  if (text === undefined) return ITERATIONS.default;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < ITERATIONS.min || n > ITERATIONS.max) {
    throw new UsageError(`precision-check: --iterations must be a whole number from ${ITERATIONS.min} to ${ITERATIONS.max} (has ${text})`);
  }
  return n;
}

function photoPathsOf(args: Args): string[] {
  const list = stringFlag(args, 'photo');
  if (list !== undefined) {
    const files = list.split(',').map((s) => s.trim()).filter(Boolean);
    if (files.length === 0) throw new UsageError('precision-check: --photo names no file');
    return files;
  }
  const cached = cachedDemoPhotoPaths();
  if (cached) return cached;
  throw new UsageError('precision-check: give --photo <file>, a JPEG or PNG showing one face (a frame of this ' +
    'board\'s camera is best): the package ships no photo, and no demo photo of the synthetic camera is in the cache');
}

async function loadPhoto(file: string, limits: ImageLimits): Promise<ComparedPhoto> {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch (err) {
    throw new CheckFailure(`cannot read the photo ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, EX_NOINPUT);
  }
  try {
    return { name: file, rgb: await decodeImageBytes('photo', bytes, limits) };
  } catch (err) {
    if (!(err instanceof ImageDecodeError)) throw err;
    throw new CheckFailure(`${file} is not a photo the service decodes (JPEG, PNG, WebP, ...): ${err.reason}`, EX_DATAERR);
  }
}

const round = (v: number, digits = 2) => +v.toFixed(digits);

function summary(values: number[]): { p50: number; p95: number } {
  return { p50: round(percentile(values, 50)!), p95: round(percentile(values, 95)!) };
}

function precisionReport(runs: PrecisionRuns) {
  return { modelId: runs.modelId, photoToTemplateMs: summary(runs.photoToTemplate), embedMs: summary(runs.embed) };
}

interface Recommendation {
  precision: Precision;
  rule: string;
  reason: string;
}

function recommend(speedup: number, lowestCosine: number): Recommendation {
  const rule = `int8 only when photo -> template (p50) is at least ${INT8_RULE.minSpeedup}x faster than float32 here ` +
    `and the two precisions' templates keep cosine >= ${INT8_RULE.minCosine}`;
  if (lowestCosine < INT8_RULE.minCosine) {
    return { precision: 'float32', rule, reason: `int8 templates are only ${round(lowestCosine, 4)} from float32's here` };
  }
  if (speedup < INT8_RULE.minSpeedup) return { precision: 'float32', rule, reason: `int8 is only ${round(speedup)}x as fast here` };
  return { precision: 'int8', rule, reason: `int8 is ${round(speedup)}x as fast here` };
}

function capabilityText(cpu: Int8DotCapability): string {
  const looked = cpu.lookedFor.length ? ` (looked for ${cpu.lookedFor.join(', ')})` : '';
  if (cpu.present === null) return `unknown on ${cpu.arch}: /proc/cpuinfo lists no flags to read${looked}`;
  return cpu.present ? `yes on ${cpu.arch}: ${cpu.found.join(', ')}` : `none on ${cpu.arch}${looked}`;
}

function report(photos: string[], iterations: number, warmup: number, comparison: PrecisionComparison, cpu: Int8DotCapability) {
  const [f, q] = PRECISIONS.map((p) => precisionReport(comparison[p]));
  const ratio = {
    photoToTemplate: round(q.photoToTemplateMs.p50 / f.photoToTemplateMs.p50, 3),
    embed: round(q.embedMs.p50 / f.embedMs.p50, 3),
  };
  return {
    photos, iterations, warmup, threads: 1, int8Networks: comparison.int8Networks,
    cpu: { arch: cpu.arch, int8DotProduct: cpu.present, found: cpu.found, lookedFor: cpu.lookedFor },
    float32: f, int8: q,
    /** int8 time / float32 time, at p50: below 1, int8 is faster. */
    ratio,
    lowestCosine: round(comparison.lowestCosine, 4),
    recommendation: recommend(f.photoToTemplateMs.p50 / q.photoToTemplateMs.p50, comparison.lowestCosine),
  };
}

function printText(r: ReturnType<typeof report>, cpu: Int8DotCapability, io: Io): void {
  const ms = (s: { p50: number; p95: number }) => `${s.p50.toFixed(2)} / ${s.p95.toFixed(2)} ms`.padStart(20);
  io.out(`precision-check: float32 and int8 template networks (int8 form: ${r.int8Networks.join(', ')}), 1 thread each, ` +
    `${r.iterations} alternating runs each after ${r.warmup} warm-up runs, on ${r.photos.length} photo${r.photos.length === 1 ? '' : 's'}`);
  io.out(`int8 dot-product instructions: ${capabilityText(cpu)}`);
  io.out(`${''.padEnd(18)}${'float32 p50 / p95'.padStart(20)}${'int8 p50 / p95'.padStart(20)}  int8/float32`);
  io.out(`${'photo -> template'.padEnd(18)}${ms(r.float32.photoToTemplateMs)}${ms(r.int8.photoToTemplateMs)}  ${r.ratio.photoToTemplate.toFixed(2)}`);
  io.out(`${'embedding stage'.padEnd(18)}${ms(r.float32.embedMs)}${ms(r.int8.embedMs)}  ${r.ratio.embed.toFixed(2)}`);
  io.out(`lowest template cosine float32 vs int8: ${r.lowestCosine.toFixed(4)}`);
  const rec = r.recommendation;
  io.out(`recommendation: ${rec.precision} (${rec.reason}; the rule: ${rec.rule}). ` +
    'Switching precision means a reindex of every store; the accuracy guard was measured on x86.');
}

export async function precisionCheckCommand(args: Args, io: Io): Promise<number> {
  if (args.positional.length > 1) throw new UsageError('precision-check takes no arguments (the photo: --photo <file>)');
  const format = stringFlag(args, 'format') ?? 'text';
  if (format !== 'text' && format !== 'json') throw new UsageError('precision-check: --format text or json');
  const iterations = iterationsOf(args);
  const files = photoPathsOf(args);
  const config = configOf(args);
  try {
    const limits = { maxBytes: config.image.max_bytes, maxPixels: config.image.max_pixels };
    const photos: ComparedPhoto[] = [];
    for (const file of files) photos.push(await loadPhoto(file, limits));
    const warmup = Math.max(WARMUP_RUNS, photos.length);
    // photo -> template as identify runs it: detection, the largest face's landmarks and its template
    const comparison = await comparePrecisions(photos, { runs: iterations, warmup, analyze: operationOptions('identify') });
    const cpu = int8DotCapability();
    const r = report(files, iterations, warmup, comparison, cpu);
    if (format === 'json') io.out(JSON.stringify(r));
    else printText(r, cpu, io);
    return 0;
  } catch (err) {
    const failure = err instanceof CheckFailure ? err
      : err instanceof NoFaceError ? new CheckFailure(`${err.message}: give a photo showing a face, large and facing the camera`, EX_DATAERR)
        : err instanceof Int8ModelError ? new CheckFailure(err.message, EX_OSFILE) : undefined;
    if (!failure) throw err;
    io.err(`face-check: precision-check: ${failure.message}`);
    return failure.exitCode;
  }
}
