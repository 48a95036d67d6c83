// The PostgreSQL client (pg), loaded on first use: a process whose store is LMDB's (device mode, a single
// node, most commands) never loads it. pg decides as it loads whether it runs in a Cloudflare Worker: where
// `navigator.userAgent` is not defined (Node before 21) it builds a `new Response(...)` to ask, which loads
// Node's whole fetch implementation, a noticeable part of every PostgreSQL node's start before its first
// statement (figure: docs/benchmarks.md). For that load only, a `navigator` naming Node is lent, as
// Node 21 and later define one themselves; none is left behind.
import type * as Pg from 'pg';

let loaded: typeof Pg | undefined;

export function pg(): typeof Pg {
  if (loaded) return loaded;
  const lend = (globalThis as { navigator?: unknown }).navigator === undefined;
  if (lend) {
    Object.defineProperty(globalThis, 'navigator', {
      value: { userAgent: `Node.js/${process.versions.node.split('.')[0]}` }, configurable: true, writable: true,
    });
  }
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    loaded = require('pg') as typeof Pg;
  } finally {
    if (lend) delete (globalThis as { navigator?: unknown }).navigator;
  }
  return loaded;
}
