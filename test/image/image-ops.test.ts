// The native resampling (native/core/face/image_ops.cpp: crops, letterbox, alignment warps) against a per-pixel
// reference written in native/test/image_ops_test.cpp, bit for bit: the axis-aligned fast path must give
// exactly what the general path gives. Needs a C++ compiler (as building the addon does); skipped without.
import t from 'tap';

import { compilerSkip, runNativeCheck } from '../helpers/native-test';

t.test('warps and crops equal the per-pixel reference', { skip: compilerSkip() }, async (t) => {
  const { cases, last } = runNativeCheck('image_ops_test', ['test/image_ops_test.cpp', 'core/face/image_ops.cpp']);
  t.ok(cases.length >= 7, `${cases.length} cases ran`);
  for (const line of cases) t.ok(line.startsWith('ok '), line);
  t.equal(last, '0 failed');
});
