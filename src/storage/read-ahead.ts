// Files read into the page cache ahead of their use, by the kernel (the addon's storage.readAhead:
// posix_fadvise WILLNEED a few MiB at a time, nothing copied, off the event loop).
import { native } from '../native';

export interface ReadAheadHandle {
  /** Settles when the kernel has been asked for everything, or once stopped; never rejects. */
  readonly done: Promise<{ requested: number; files: number }>;
  /** Asks for nothing more (what was asked for still arrives). */
  stop(): void;
}

interface StorageBinding {
  readAhead(paths: string[], maxBytes: number): ReadAheadHandle;
}

/** Asks for `paths` in order, up to `maxBytes` in all; undefined where the addon cannot. */
export function readFilesAhead(paths: string[], maxBytes: number): ReadAheadHandle | undefined {
  const binding = native.storage as Partial<StorageBinding> | undefined;
  if (typeof binding?.readAhead !== 'function' || paths.length === 0) return undefined;
  const handle = binding.readAhead(paths, maxBytes);
  return { done: handle.done.catch(() => ({ requested: 0, files: 0 })), stop: () => handle.stop() };
}
