// Errors the PostgreSQL backend raises on purpose. A request that meets an unreachable, restarting or
// overloaded database must be answered 503 at once (the load balancer and the client retry), never hang and
// never be a 500: every failure of that kind is turned into one typed error the HTTP layer can map.

/** Why the database could not serve the request. */
export type UnavailableReason = 'unreachable' | 'timeout' | 'shutting-down' | 'overloaded';

/** The database cannot serve this request now; answer 503 with Retry-After. Nothing was acknowledged. */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
  readonly httpStatus = 503;

  constructor(readonly reason: UnavailableReason, detail: string, options?: { cause?: unknown }) {
    super(`database unavailable (${reason}): ${detail}`, options);
  }
}

/** The database holds a schema written by a newer program; this one must not touch it. */
export class SchemaTooNewError extends Error {
  override name = 'SchemaTooNewError';

  constructor(readonly databaseVersion: number, readonly programVersion: number) {
    super(`database schema version ${databaseVersion} is newer than this program's ${programVersion}: ` +
      'upgrade the program (no node of an older version may start against this database)');
  }
}

// SQLSTATE classes and codes meaning "the server cannot do it now", not "the request is wrong".
const CONNECTION_CLASS = '08';
const RESOURCE_CLASS = '53';  // insufficient resources, too many connections
const SHUTTING_DOWN = new Set(['57P01', '57P02', '57P03']);  // admin shutdown, crash shutdown, cannot connect now
const TIMED_OUT = new Set(['57014', '55P03']);  // statement timeout (query canceled), lock timeout

// Node socket errors and the messages pg and pg-pool give a connection that failed or timed out.
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND',
  'EPIPE', 'EAI_AGAIN', 'ECONNABORTED']);
const TIMEOUT_MESSAGES = /timeout exceeded when trying to connect|Connection terminated due to connection timeout|Query read timeout|timeout expired/i;
const LOST_MESSAGES = /Connection terminated|not queryable|Client was closed|connection error|Cannot use a pool after calling end/i;

/** The unavailability `err` stands for, or undefined when it is some other error (a bug, a constraint). */
export function unavailability(err: unknown): DatabaseUnavailableError | undefined {
  if (err instanceof DatabaseUnavailableError) return err;
  if (!(err instanceof Error)) return undefined;
  const code = (err as { code?: unknown }).code;
  const detail = err.message.split('\n')[0];
  if (typeof code === 'string') {
    if (SHUTTING_DOWN.has(code)) return new DatabaseUnavailableError('shutting-down', detail, { cause: err });
    if (TIMED_OUT.has(code)) return new DatabaseUnavailableError('timeout', detail, { cause: err });
    if (code.startsWith(CONNECTION_CLASS)) return new DatabaseUnavailableError('unreachable', detail, { cause: err });
    if (code.startsWith(RESOURCE_CLASS)) return new DatabaseUnavailableError('overloaded', detail, { cause: err });
    if (SOCKET_CODES.has(code)) return new DatabaseUnavailableError('unreachable', detail, { cause: err });
  }
  if (TIMEOUT_MESSAGES.test(err.message)) return new DatabaseUnavailableError('timeout', detail, { cause: err });
  if (LOST_MESSAGES.test(err.message)) return new DatabaseUnavailableError('unreachable', detail, { cause: err });
  return undefined;
}

/** `err` as the typed error when it means unavailability, else unchanged. */
export function translated(err: unknown): unknown {
  return unavailability(err) ?? err;
}

/** Deadlock or serialization failure: the transaction did nothing and may simply be run again. */
export function isRetryableConflict(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === '40P01' || code === '40001';
}

export interface LockOwner {
  pid: number;
  /** What holds it, e.g. "serve" or "reindex". */
  role: string;
  since: string;
  host: string;
}

export class StoreBusyError extends Error {
  constructor(readonly owner: LockOwner, wanted: string) {
    super(`the store is in use by face-check ${owner.role} (pid ${owner.pid} on ${owner.host}, since ${owner.since}); ` +
      `stop it before running ${wanted}`);
    this.name = 'StoreBusyError';
  }
}
