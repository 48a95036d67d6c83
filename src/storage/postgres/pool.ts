// The connection pool of one node and the two ways the repositories use it: a single statement, or a
// transaction. Both fail fast with DatabaseUnavailableError (../errors.ts) instead of waiting on a database
// that is down: connecting is bounded by connectTimeoutMs (also the wait for a free pool slot), a statement
// by the server's statement_timeout and, for a server that stopped answering altogether, by a client-side
// read timeout a little longer. Broken connections are dropped from the pool, so the pool reconnects by
// itself on the next request once the server is back.
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { isRetryableConflict, translated, unavailability } from '../errors';
import { pg } from './pg-module';

export interface PostgresSettings {
  /** postgres://user[:password]@host:port/database (the password, if any, is never logged). */
  url: string;
  /** Connections this node holds at most. */
  poolSize: number;
  /** Longest a statement may run (server-side statement_timeout; a lock wait counts). */
  statementTimeoutMs: number;
  /** Longest to wait for a connection: a free pool slot or a new connection to the server. */
  connectTimeoutMs: number;
  /** An idle connection is closed after this long. */
  idleTimeoutMs: number;
  /** A transaction left idle this long (a node stuck or gone mid-transaction) is ended by the server, its locks freed. */
  idleInTransactionTimeoutMs: number;
  /** Shown in pg_stat_activity. */
  applicationName: string;
}

export const DEFAULT_POSTGRES_SETTINGS: Omit<PostgresSettings, 'url'> = {
  poolSize: 10,
  statementTimeoutMs: 5_000,
  connectTimeoutMs: 3_000,
  idleTimeoutMs: 30_000,
  idleInTransactionTimeoutMs: 15_000,
  applicationName: 'face-check',
};

/** Margin of the client-side read timeout over statement_timeout: the server's own cancel normally answers first. */
const READ_TIMEOUT_MARGIN_MS = 1_000;

/** Settings from a url and overrides, checked. */
export function postgresSettings(url: string, overrides: Partial<Omit<PostgresSettings, 'url'>> = {}): PostgresSettings {
  const settings: PostgresSettings = { ...DEFAULT_POSTGRES_SETTINGS, ...overrides, url };
  if (!/^postgres(ql)?:\/\//.test(url)) throw new RangeError('postgres_url must start with postgres:// or postgresql://');
  for (const key of ['poolSize', 'statementTimeoutMs', 'connectTimeoutMs', 'idleTimeoutMs', 'idleInTransactionTimeoutMs'] as const) {
    const v = settings[key];
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`postgres ${key} must be a whole number >= 1, not ${String(v)}`);
  }
  return settings;
}

/** host:port/database of the url, without user or password: what messages name. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `postgres ${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  } catch {
    return 'postgres (unparsable url)';
  }
}

/** Client options shared by the pool and the dedicated connections (migrations, the change follower). */
export function clientOptions(settings: PostgresSettings, applicationName = settings.applicationName) {
  return {
    connectionString: settings.url,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    statement_timeout: settings.statementTimeoutMs,
    query_timeout: settings.statementTimeoutMs + READ_TIMEOUT_MARGIN_MS,
    idle_in_transaction_session_timeout: settings.idleInTransactionTimeoutMs,
    keepAlive: true,
    application_name: applicationName,
  };
}

export interface Queryable {
  /**
   * `prepared`: a name unique to `text`, for a statement run on every request: each connection then parses
   * and plans it once instead of on every run (a CTE costs the server several times its execution to plan).
   */
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[], prepared?: string): Promise<QueryResult<R>>;
}

/** A statement runner inside one open transaction. */
export interface Tx extends Queryable {
  /** Runs `hook` just before COMMIT (after everything else the transaction does): see ./change-log.ts. */
  beforeCommit(hook: (tx: Tx) => Promise<void>): void;
}

export interface TransactionOptions {
  /** Runs again after a deadlock or serialization failure, this many times at most (only for re-runnable work). */
  retries?: number;
}

/** What the repositories are built on: a pool, or one transaction they join (./advisory-lock.ts). */
export interface Db extends Queryable {
  transaction<T>(fn: (tx: Tx) => Promise<T>, options?: TransactionOptions): Promise<T>;
}

/** The node's pool. */
export class PostgresPool implements Db {
  readonly pool: Pool;
  /** Errors of idle connections (a server restart drops them all); the pool has already discarded them. */
  idleErrors = 0;

  constructor(readonly settings: PostgresSettings) {
    this.pool = new (pg().Pool)({ ...clientOptions(settings), max: settings.poolSize, idleTimeoutMillis: settings.idleTimeoutMs });
    // Without a listener an idle connection's error would end the process.
    this.pool.on('error', () => { this.idleErrors++; });
  }

  async query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[], prepared?: string): Promise<QueryResult<R>> {
    try {
      return await (prepared ? this.pool.query<R>({ name: prepared, text, values }) : this.pool.query<R>(text, values));
    } catch (err) {
      throw translated(err);
    }
  }

  async transaction<T>(fn: (tx: Tx) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.connect();
      let broken: Error | undefined;
      const onError = (err: Error) => { broken = err; };
      // A checked-out connection has no pool listener: one that breaks between statements would throw.
      client.on('error', onError);
      try {
        const hooks: Array<(tx: Tx) => Promise<void>> = [];
        const tx: Tx = {
          query: <R extends QueryResultRow>(text: string, values?: unknown[], prepared?: string) =>
            (prepared ? client.query<R>({ name: prepared, text, values }) : client.query<R>(text, values)),
          beforeCommit: (hook) => { hooks.push(hook); },
        };
        await client.query('BEGIN');
        const result = await fn(tx);
        for (let i = 0; i < hooks.length; i++) await hooks[i](tx);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        if (unavailability(err)) broken ??= err as Error;
        else await client.query('ROLLBACK').catch((e: Error) => { broken = e; });
        if (!broken && isRetryableConflict(err) && attempt < (options.retries ?? 0)) continue;
        throw translated(err);
      } finally {
        client.removeListener('error', onError);
        // A broken connection is destroyed, not returned: the next request opens a fresh one.
        client.release(broken ?? false);
      }
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async connect(): Promise<PoolClient> {
    try {
      return await this.pool.connect();
    } catch (err) {
      throw translated(err);
    }
  }
}

/** The repositories' view of a transaction already open: their own "transactions" join it. */
export class JoinedTransaction implements Db {
  constructor(private readonly tx: Tx) {}

  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[], prepared?: string): Promise<QueryResult<R>> {
    return this.tx.query<R>(text, values, prepared);
  }

  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return fn(this.tx);
  }
}
