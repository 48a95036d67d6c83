// Inference runs with denormals flushed (native/core/ort/float_mode.h, used by every ORT run): on Intel cores
// denormal operands cost a microcode assist each, which made the embedding network 10x slower here. The
// scope must flush inside and give the thread its own mode back after (libuv's threads run other code too).
import t from 'tap';

import { compilerSkip, runNativeCheck } from '../helpers/native-test';

t.test('FlushDenormals flushes inside its scope and restores the mode after', { skip: compilerSkip() }, async (t) => {
  const { cases, last } = runNativeCheck('float_mode_test', ['test/float_mode_test.cpp']);
  t.equal(cases.length, 5, `${cases.length} cases ran`);
  for (const line of cases) t.ok(line.startsWith('ok '), line);
  t.equal(last, '0 failed');
});
