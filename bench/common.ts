// Shared pieces of the benchmarks: shared-data paths, image loading, statistics, the final JSON line.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import sharp from 'sharp';

import { packageRoot } from '../src/package-root';
import type { RgbImage } from '../src/engine/types';

/** ../shared/data beside the repository (or FACE_CHECK_DATA), or null when absent. */
export function sharedDataDir(): string | null {
  const dir = process.env.FACE_CHECK_DATA ?? path.resolve(packageRoot(), '..', 'shared', 'data');
  return fs.existsSync(dir) ? dir : null;
}

/** Exits with a clear message when the shared photos are missing (benchmarks cannot run without them). */
export function requireSharedData(what: string): string {
  const dir = sharedDataDir();
  if (!dir) {
    console.log(`SKIP ${what}: ../shared/data is absent (set FACE_CHECK_DATA to its path)`);
    console.log(JSON.stringify({ bench: what, skipped: 'shared data absent' }));
    process.exit(0);
  }
  return dir;
}

export async function loadRgb(file: string): Promise<RgbImage> {
  const { data, info } = await sharp(file).rotate().removeAlpha().toColourspace('srgb').raw()
    .toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
}

export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Runs `tasks` with at most `concurrency` in flight. */
export async function mapLimit<T, R>(items: T[], concurrency: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }));
  return out;
}

export function outDir(): string {
  const dir = path.join(packageRoot(), 'bench', 'out');
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

export function printJsonLine(result: Record<string, unknown>): void {
  console.log(JSON.stringify(result));
}

/**
 * Whether something accepts TCP connections on the loopback port: what a bench polls a starting program with
 * (a failing fetch every 10 ms cost the bench's process 0.4-0.6 s of CPU during a 3 s start on two cores).
 */
export function acceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}
