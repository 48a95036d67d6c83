// Reading a whole table in pages by its primary key (keyset pagination): each statement reads at most one page,
// so it stays well within the statement timeout however large the table grows (moving a store reads every
// counter). Table and column names come from the code, never from input.
import type { QueryResultRow } from 'pg';
import type { Queryable } from './pool';

export const PAGE_ROWS = 10_000;

/** Every row of `table` (`columns`), ordered by `key` (the primary key's columns), read PAGE_ROWS at a time. */
export async function allRowsByKey<R extends QueryResultRow>(q: Queryable, table: string, columns: string, key: readonly string[],
  pageRows = PAGE_ROWS): Promise<R[]> {
  const keyList = key.join(', ');
  const placeholders = key.map((_, i) => `$${i + 2}`).join(', ');
  const out: R[] = [];
  let after: unknown[] | undefined;
  for (;;) {
    const where = after ? `WHERE (${keyList}) > (${placeholders})` : '';
    const { rows } = await q.query<R>(`SELECT ${columns} FROM ${table} ${where} ORDER BY ${keyList} LIMIT $1`, [pageRows, ...(after ?? [])]);
    for (const r of rows) out.push(r);
    if (rows.length < pageRows) return out;
    const last = rows[rows.length - 1];
    after = key.map((k) => last[k]);
  }
}
