// Files read into the page cache ahead of their use, by the kernel (the addon's storage.readAhead:
// posix_fadvise WILLNEED a few MiB at a time, nothing copied, off the event loop).
import { storageBinding, type NativeReadAhead } from './native-storage';

export type ReadAheadHandle = NativeReadAhead;

/** Asks for `paths` in order, up to `maxBytes` in all; undefined where the addon cannot. */
export function readFilesAhead(paths: string[], maxBytes: number): ReadAheadHandle | undefined {
  const binding = storageBinding();
  if (!binding || paths.length === 0) return undefined;
  const handle = binding.readAhead(paths, maxBytes);
  return { done: handle.done.catch(() => ({ requested: 0, files: 0 })), stop: () => handle.stop() };
}
