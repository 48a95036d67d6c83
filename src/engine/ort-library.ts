// Finds libonnxruntime.so.1 inside the installed onnxruntime-node package, wherever npm placed it
// (nested under this package or hoisted beside it), for the addon to dlopen.
import fs from 'node:fs';
import path from 'node:path';

const ORT_DIRS: Record<string, string> = { x64: 'x64', arm64: 'arm64' };

export function resolveOrtLibrary(fromDir: string = __dirname): string {
  if (process.env.FACE_CHECK_ORT_LIBRARY) return process.env.FACE_CHECK_ORT_LIBRARY;
  if (process.platform !== 'linux' || !ORT_DIRS[process.arch]) {
    throw new Error(`face-check: no ONNX Runtime library for ${process.platform}-${process.arch} (linux x64/arm64 only)`);
  }
  const pkg = require.resolve('onnxruntime-node/package.json', { paths: [fromDir] });
  const lib = path.join(path.dirname(pkg), 'bin', 'napi-v6', 'linux', ORT_DIRS[process.arch], 'libonnxruntime.so.1');
  if (!fs.existsSync(lib)) throw new Error(`face-check: ${lib} is missing; reinstall onnxruntime-node`);
  return lib;
}
