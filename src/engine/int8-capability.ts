// Whether this CPU has the int8 dot-product instructions ONNX Runtime's int8 kernels gain from, as the kernel
// reports them in /proc/cpuinfo: VNNI (and AMX) on x86-64, the dot-product (`sdot`/`udot`) and int8
// matrix-multiply extensions on arm64. Without them an int8 network runs on wider multiply-add sequences and
// gains little over float32.
import fs from 'node:fs';

/** The cpuinfo flags that name int8 dot-product instructions, per Node architecture. */
export const INT8_DOT_FLAGS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  x64: ['avx512_vnni', 'avx_vnni', 'amx_int8'],
  arm64: ['asimddp', 'i8mm'],
});

export interface Int8DotCapability {
  /** Node's name of the architecture (x64, arm64, ...). */
  arch: string;
  /** true: at least one of `lookedFor` is listed; false: none is; null: unknown (no cpuinfo, or an
   *  architecture without a known flag). */
  present: boolean | null;
  /** The flags found, in the order of `lookedFor`. */
  found: string[];
  lookedFor: string[];
}

/** The first processor's flag list (x86 `flags`, arm64 `Features`), or undefined when there is none. */
function cpuFlags(cpuinfo: string): Set<string> | undefined {
  const line = /^(?:flags|Features)\s*:(.*)$/m.exec(cpuinfo);
  return line ? new Set(line[1].trim().split(/\s+/)) : undefined;
}

/** Reads /proc/cpuinfo (Linux); null where it cannot be read. */
function readCpuinfo(): string | null {
  try {
    return fs.readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return null;
  }
}

/** This CPU's (or the given cpuinfo text's; null: none could be read). */
export function int8DotCapability(cpuinfo: string | null = readCpuinfo(), arch: string = process.arch): Int8DotCapability {
  const lookedFor = [...(INT8_DOT_FLAGS[arch] ?? [])];
  const flags = cpuinfo === null ? undefined : cpuFlags(cpuinfo);
  if (!flags || lookedFor.length === 0) return { arch, present: null, found: [], lookedFor };
  const found = lookedFor.filter((f) => flags.has(f));
  return { arch, present: found.length > 0, found, lookedFor };
}
