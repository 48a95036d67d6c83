// Every SIMD kernel of the similarity index against the scalar reference.
// Tolerances: int8 dot products and block scans are integer arithmetic and must be bit-identical (0);
// float32 dot products may differ by summation order: |kernel - exact| <= 1e-6 * sum|a_i * b_i| + 1e-7;
// whole searches: the same keys, scores within 1e-5.
import { execFileSync } from 'node:child_process';

import t from 'tap';

import type { KernelName } from '../../src/similarity-index/similarity-index';
import { gaussian, newIndex, randomVectors, rng } from '../helpers/index-addon';

const ix = newIndex();
const b = ix.native;
const kernels = ix.kernels;

function randomCodes(n: number, rand: () => number): Int8Array {
  const out = new Int8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rand() * 255) - 127; // [-127, 127]
  return out;
}

function refDot(a: Int8Array, c: Int8Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * c[i];
  return s;
}

t.test('kernel list and run-time choice', async (t) => {
  t.equal(kernels[0], 'scalar', 'scalar is always there');
  const arch = process.arch;
  if (arch === 'x64') t.ok(kernels.every((k) => ['scalar', 'avx2', 'avx512', 'avx512vnni'].includes(k)));
  if (arch === 'arm64') t.same(kernels, ['scalar', 'neon']);
  if (!process.env.FACE_CHECK_SIMD) t.equal(ix.kernel, kernels[kernels.length - 1], 'the best kernel is active');
  const cpuinfo = arch === 'x64' ? require('node:fs').readFileSync('/proc/cpuinfo', 'utf8') as string : '';
  if (/\bavx512_vnni\b/.test(cpuinfo) && /\bavx512bw\b/.test(cpuinfo)) t.ok(kernels.includes('avx512vnni'), 'VNNI detected');
  if (/\bavx2\b/.test(cpuinfo)) t.ok(kernels.includes('avx2'), 'AVX2 detected');
});

t.test('FACE_CHECK_SIMD forces a kernel', async (t) => {
  const addon = process.env.FACE_CHECK_ADDON ?? '';
  const script = `
    const file = process.env.FACE_CHECK_ADDON;
    const ix = (file ? require(file) : require('node-gyp-build')(process.cwd())).index;
    process.stdout.write(JSON.stringify({ active: ix.activeKernel(), note: ix.kernelNote() }));`;
  for (const k of [...kernels, 'bogus']) {
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], {
      env: { ...process.env, FACE_CHECK_SIMD: k, FACE_CHECK_ADDON: addon }, encoding: 'utf8',
    })) as { active: string; note: string };
    if (k === 'bogus') {
      t.equal(out.active, kernels[kernels.length - 1], 'unknown name: best kernel');
      t.match(out.note, /bogus/, 'and a note says why');
    } else {
      t.equal(out.active, k, `FACE_CHECK_SIMD=${k}`);
      t.equal(out.note, '');
    }
  }
});

t.test('int8 dot products are bit-identical to the scalar reference', async (t) => {
  const rand = rng(1);
  let checked = 0;
  for (let n = 0; n <= 300; n++) {
    const a = randomCodes(n, rand);
    const c = randomCodes(n, rand);
    const cases: [string, Int8Array, Int8Array][] = [
      ['random', a, c],
      ['zeros', new Int8Array(n), c],
      ['identical', a, a],
      ['max * min', new Int8Array(n).fill(127), new Int8Array(n).fill(-127)],
      ['min * min', new Int8Array(n).fill(-127), new Int8Array(n).fill(-127)],
    ];
    for (const [name, x, y] of cases) {
      const want = refDot(x, y);
      for (const k of kernels) {
        const got = b.dotI8(k, x, y);
        if (got !== want) t.fail(`${k} ${name} n=${n}: ${got} != ${want}`);
        checked++;
      }
    }
  }
  t.pass(`${checked} int8 dot products agree`);
});

t.test('int8 block scans (many queries x many rows, any dim) are bit-identical', async (t) => {
  const rand = rng(2);
  for (const dim of [1, 7, 63, 64, 65, 100, 128, 511, 512, 513, 1000]) {
    for (const [nq, nr] of [[1, 1], [3, 5], [4, 4], [5, 9], [9, 300], [1, 513]]) {
      const q = randomCodes(nq * dim, rand);
      const rows = randomCodes(nr * dim, rand);
      if (nr === 5) rows.fill(127); // saturating pattern
      if (nq === 4) q.fill(-127);
      const ref = b.scanI8('scalar', q, rows, dim);
      for (let j = 0; j < nq; j++)
        for (let r = 0; r < nr; r++) {
          const want = refDot(q.subarray(j * dim, (j + 1) * dim), rows.subarray(r * dim, (r + 1) * dim));
          if (ref[j * nr + r] !== want) t.fail(`scalar scan dim=${dim} (${j},${r})`);
        }
      for (const k of kernels) {
        const got = b.scanI8(k, q, rows, dim);
        t.same(Array.from(got), Array.from(ref), `${k} dim=${dim} nq=${nq} nr=${nr}`);
      }
    }
  }
});

t.test('float32 dot products agree with the exact value within 1e-6 relative', async (t) => {
  const g = gaussian(rng(3));
  let worst = 0;
  for (let n = 0; n <= 600; n += n < 70 ? 1 : 37) {
    const a = new Float32Array(n).map(() => g());
    const c = new Float32Array(n).map(() => g());
    let exact = 0;
    let mag = 0;
    for (let i = 0; i < n; i++) {
      exact += a[i] * c[i];
      mag += Math.abs(a[i] * c[i]);
    }
    for (const k of kernels) {
      const got = b.dotF32(k, a, c);
      const err = Math.abs(got - exact);
      worst = Math.max(worst, err / (mag + 1e-30));
      if (err > 1e-6 * mag + 1e-7) t.fail(`${k} n=${n}: ${got} vs ${exact}`);
    }
    for (const k of kernels) t.equal(b.dotF32(k, new Float32Array(n), c), 0, `${k} zeros n=${n}`);
  }
  t.ok(worst < 1e-6, `worst relative error ${worst.toExponential(2)}`);
});

t.test('whole searches agree across kernels (random, zeros, duplicates, dim 100)', async (t) => {
  for (const dim of [512, 100]) {
    const name = `kernels-${dim}`;
    const c = ix.createCollection(name, dim);
    const n = 3000;
    const data = randomVectors(n, dim, 10 + dim);
    for (let i = 0; i < 50; i++) data.copyWithin((n - 1 - i) * dim, i * dim, (i + 1) * dim); // duplicates
    data.fill(0, 100 * dim, 101 * dim); // one zero template
    const keys = Array.from({ length: n }, (_, i) => `k${i}`);
    await c.bulkLoad(data, keys, { clear: true });
    const nq = 24;
    const queries = randomVectors(nq, dim, 99);
    for (let j = 0; j < 8; j++) for (let d = 0; d < dim; d++) queries[j * dim + d] = data[j * dim + d] + 0.3 * queries[j * dim + d];
    queries.fill(0, 8 * dim, 9 * dim); // a zero query: every score is 0, ties ordered by key
    const ref = await c.searchBatch(queries, { k: 10, kernel: 'scalar' });
    t.same(ref[8].map((h) => h.score), new Array(10).fill(0), 'zero query scores 0');
    t.same(ref[8].map((h) => h.key), keys.slice().sort().slice(0, 10), 'zero query: ties by key');
    for (const k of kernels as KernelName[]) {
      for (const threads of [1, 2]) {
        const got = await c.searchBatch(queries, { k: 10, kernel: k, threads });
        let bad = 0;
        got.forEach((hits, j) => hits.forEach((h, i) => {
          if (h.key !== ref[j][i].key || Math.abs(h.score - ref[j][i].score) > 1e-5) bad++;
        }));
        t.equal(bad, 0, `${k}, ${threads} thread(s), dim ${dim}: same hits as scalar`);
      }
    }
    ix.dropCollection(name);
  }
});
