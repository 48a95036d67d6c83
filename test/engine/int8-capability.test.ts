// The int8 dot-product capability read from /proc/cpuinfo text as x86-64 and arm64 kernels write it.
import t from 'tap';

import { int8DotCapability } from '../../src/engine/int8-capability';

const x86 = (flags: string) => `processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Some Xeon\nflags\t\t: ${flags}\n\nprocessor\t: 1\nflags\t\t: fpu\n`;
const arm = (features: string) => `processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: ${features}\nCPU implementer\t: 0x41\n`;

t.test('x86-64: VNNI (AVX-512 or AVX) and AMX int8 are the int8 dot-product flags', async (t) => {
  t.same(int8DotCapability(x86('fpu sse4_2 avx2 fma'), 'x64'),
    { arch: 'x64', present: false, found: [], lookedFor: ['avx512_vnni', 'avx_vnni', 'amx_int8'] }, 'AVX2 only: none');
  t.same(int8DotCapability(x86('avx2 avx512f avx512_vnni'), 'x64').found, ['avx512_vnni']);
  t.same(int8DotCapability(x86('avx2 avx_vnni'), 'x64').found, ['avx_vnni']);
  t.equal(int8DotCapability(x86('avx2 avx_vnni_int8'), 'x64').present, false, 'a flag that only starts alike is not taken');
});

t.test('arm64: asimddp (sdot/udot) and i8mm', async (t) => {
  t.same(int8DotCapability(arm('fp asimd evtstrm crc32 cpuid'), 'arm64'),
    { arch: 'arm64', present: false, found: [], lookedFor: ['asimddp', 'i8mm'] }, 'Cortex-A72 (Raspberry Pi 4): none');
  t.same(int8DotCapability(arm('fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp'), 'arm64').found,
    ['asimddp'], 'Cortex-A76 (Raspberry Pi 5)');
});

t.test('unknown: no cpuinfo, no flag line, or an architecture without known flags', async (t) => {
  t.equal(int8DotCapability(null, 'x64').present, null);
  t.equal(int8DotCapability('processor\t: 0\n', 'arm64').present, null);
  t.same(int8DotCapability(x86('avx512_vnni'), 'riscv64'), { arch: 'riscv64', present: null, found: [], lookedFor: [] });
});
