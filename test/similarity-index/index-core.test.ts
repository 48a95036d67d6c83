// The index core without Node (native/test/index_core_test.cpp): every SIMD kernel against the scalar
// reference and the index against a float32 brute force, with a concurrent search/write stress at the end.
// Built once with the addon's flags (each kernel file with its own instruction set only), then run once per
// kernel choice (FACE_CHECK_SIMD), as native/test/index-core-test.sh does. Needs a C++ compiler (as
// building the addon does); skipped without.
import os from 'node:os';
import t from 'tap';

import { buildNativeCheck, compilerSkip, NativeSource, sourceList } from '../helpers/native-test';

// The index sources come from the addon's own source list, so a file added there is tested here too, with
// the sealed import (core/sealed/: the snapshot import, the sealed template load, the AES-GCM lookup and
// the sealed values' row checks they use).
const INDEX_FOLDERS = ['native/core/index/', 'native/core/sealed/'];
const fromNative = (p: string) => p.replace(/^native\//, '');
const simdKeys = os.arch() === 'x64' ? ['simd_avx2', 'simd_avx512'] : os.arch() === 'arm64' ? ['simd_neon'] : [];
const sources: NativeSource[] = [
  'test/index_core_test.cpp',
  ...sourceList.core.filter((p) => INDEX_FOLDERS.some((folder) => p.startsWith(folder))).map(fromNative),
  ...simdKeys.flatMap((key) => sourceList[key].map((p) => ({ path: fromNative(p), isa: key.replace(/^simd_/, '') }))),
];
// '' = the kernel picked at run time for this CPU; a named kernel the CPU lacks falls back to that one.
const choices = os.arch() === 'x64' ? ['', 'scalar', 'avx2', 'avx512', 'avx512vnni'] : ['', 'scalar', 'neon'];

t.test('index kernels and search against their references', { skip: compilerSkip() }, async (t) => {
  const program = buildNativeCheck('index_core_test', sources);
  t.teardown(() => program.remove());
  for (const simd of choices) {
    t.test(`FACE_CHECK_SIMD=${simd || '<auto>'}`, async (t) => {
      const { cases, last, status } = program.run({ FACE_CHECK_SIMD: simd });
      t.same(cases.filter((l) => l.startsWith('FAIL ')), [], 'no failed check');
      t.equal(last, 'ok (0 failures)');
      t.equal(status, 0);
    });
  }
});
