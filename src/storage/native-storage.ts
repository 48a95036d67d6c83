// The addon's storage helpers (native/addon/page_cache_binding.cpp): page-cache hints for the store's map and
// for files about to be read. Loaded on first use and optional: storage opens and works where the addon is
// not built (a command, a test); a hint then does nothing.
import type { NativeAddon } from '../native';

/** 'release': the map's pages leave this process's resident set (the page cache keeps them). */
export type MapAdviceKind = 'normal' | 'random' | 'sequential' | 'release';

export interface NativeReadAhead {
  /** Settles when the kernel has been asked for everything, or once stopped. */
  readonly done: Promise<{ requested: number; files: number }>;
  /** Asks for nothing more (what was asked for still arrives). */
  stop(): void;
}

export interface StorageBinding {
  /** How many of this process's mappings of `file` were advised; -1 where /proc/self/maps cannot be read. */
  adviseMappedFile(file: string, advice: MapAdviceKind): number;
  /** Asks the kernel for `paths` in order, up to `maxBytes` in all. */
  readAhead(paths: string[], maxBytes: number): NativeReadAhead;
  /** "glibc" when the addon was built against it (and so this process runs on it), else "". */
  libc?: string;
}

let loaded: StorageBinding | null | undefined;

/** The binding, or undefined where the addon is not built or has none. */
export function storageBinding(): StorageBinding | undefined {
  if (loaded === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const b = (require('../native') as { native: NativeAddon }).native.storage as Partial<StorageBinding> | undefined;
      loaded = typeof b?.adviseMappedFile === 'function' && typeof b.readAhead === 'function' ? b as StorageBinding : null;
    } catch {
      loaded = null;
    }
  }
  return loaded ?? undefined;
}

/** The C library the addon was built against ("glibc"), or undefined where it does not say or is not built. */
export function addonLibc(): string | undefined {
  return storageBinding()?.libc || undefined;
}
