// Persons in PostgreSQL: one row per person with its metadata, its template and its reference image, both
// sealed under the data key before they leave the process. Not LMDB's segments of 32: a segment shared by
// persons would be a row that concurrent enrolments on several nodes all rewrite (lock contention and a
// 68 KB rewrite per enrolment); the gallery rebuild pays one decryption per person instead of per 32.
// Every write appends to the change log in the same transaction (./change-log.ts).
import type crypto from 'node:crypto';
import {
  type AccountPersonMeta, type CreateResult, IMAGES_DB, type PersonMeta, type PersonRecord, type TemplateBlock,
  type TemplateInput,
} from '../records';
import type { Sealer } from '../crypto/sealer';
import { appendChanges, PgChangeLog } from './change-log';
import type { AsyncPersonRepository, BulkTemplateReader, OpenedTemplates, SealedBlockConsumer } from '../interfaces';
import { PostgresPool, type Db } from './pool';
import { chooseTemplateUnsealer, CopyUnsealers, type TemplateUnsealer } from './copy-unsealer';
import { copyTemplateParts } from './template-copy';

/** Place of a sealed template; the model is part of it, so a template cannot be passed off under another model. */
export const TEMPLATES_PLACE = 'person-templates';

/** Rows read per round trip when walking every person or template. */
const PAGE = 1000;
/** Persons per template block handed to the gallery rebuild. */
const BLOCK = 1024;

function templateBytes(template: Float32Array): Buffer {
  return Buffer.from(template.buffer, template.byteOffset, template.byteLength);
}

/** A Float32Array over a fresh, aligned copy of `bytes`. */
function templateOf(bytes: Uint8Array): Float32Array {
  if (bytes.byteLength % 4 !== 0) throw new Error(`storage: template of ${bytes.byteLength} bytes is not float32`);
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float32Array(copy.buffer);
}

interface MetaRow {
  person_id: string;
  created: Date;
  updated: Date;
  model_id: string;
}

/** Where a walk of the persons' meta (metaPage) stands: its last row's key. */
export type PersonMetaPosition = Pick<PersonMetaRow, 'model_id' | 'account_id' | 'person_id'>;

export interface PersonMetaRow {
  model_id: string;
  account_id: string;
  person_id: string;
  /** Milliseconds since the epoch, as a Date of the same column holds them (cheaper to parse than a Date). */
  created_ms: number;
  updated_ms: number;
}

// Exact: extract() is numeric, and whole milliseconds are exact in a float8.
const META_PAGE_COLUMNS = `model_id, account_id, person_id,
  floor(extract(epoch FROM created) * 1000)::float8 AS created_ms, floor(extract(epoch FROM updated) * 1000)::float8 AS updated_ms`;

export class PgPersonRepository implements AsyncPersonRepository, BulkTemplateReader {
  readonly changes: PgChangeLog;

  /** `dataKey`: the sealer's key, for opening the start-up fill in batches (copyTemplates) and the gallery cache's rows. */
  constructor(private readonly db: Db, private readonly sealer: Sealer, readonly dataKey?: crypto.KeyObject) {
    this.changes = new PgChangeLog(db);
  }

  /**
   * Persons' meta in the order of the model index (model, account, person), the `limit` after `after`: a
   * node's meter cache fill (./meter-caches.ts). The index includes created and updated (schema 4), so the
   * pages come from the index, not from the heap's ~4 KB rows.
   */
  async metaPage(after: PersonMetaPosition | undefined, limit: number): Promise<PersonMetaRow[]> {
    const { rows } = after
      ? await this.db.query<PersonMetaRow>(`SELECT ${META_PAGE_COLUMNS} FROM persons
          WHERE (model_id, account_id, person_id) > ($1, $2, $3) ORDER BY model_id, account_id, person_id LIMIT $4`,
        [after.model_id, after.account_id, after.person_id, limit], 'face_check_persons_meta_after')
      : await this.db.query<PersonMetaRow>(`SELECT ${META_PAGE_COLUMNS} FROM persons
          ORDER BY model_id, account_id, person_id LIMIT $1`, [limit], 'face_check_persons_meta_first');
    return rows;
  }

  async meta(accountId: string, personId: string): Promise<(PersonMeta & { modelId: string }) | undefined> {
    const { rows } = await this.db.query<MetaRow>(
      'SELECT person_id, created, updated, model_id FROM persons WHERE account_id = $1 AND person_id = $2', [accountId, personId]);
    const r = rows[0];
    return r && { personId, created: r.created.toISOString(), updated: r.updated.toISOString(), modelId: r.model_id };
  }

  async get(accountId: string, personId: string): Promise<PersonRecord | undefined> {
    const { rows } = await this.db.query<MetaRow & { sealed_template: Buffer }>(
      `SELECT person_id, created, updated, model_id, sealed_template FROM persons
       WHERE account_id = $1 AND person_id = $2`, [accountId, personId]);
    const r = rows[0];
    if (!r) return undefined;
    return {
      personId, created: r.created.toISOString(), updated: r.updated.toISOString(), modelId: r.model_id,
      template: this.openTemplate(accountId, personId, r.model_id, r.sealed_template),
    };
  }

  async referenceImage(accountId: string, personId: string): Promise<Buffer | undefined> {
    const { rows } = await this.db.query<{ sealed_image: Buffer }>(
      'SELECT sealed_image FROM persons WHERE account_id = $1 AND person_id = $2', [accountId, personId]);
    return rows[0] && this.sealer.open(IMAGES_DB, [accountId, personId], rows[0].sealed_image);
  }

  async create(accountId: string, personId: string, input: TemplateInput, now: string): Promise<CreateResult> {
    const sealedTemplate = this.sealTemplate(accountId, personId, input.modelId, input.template);
    const sealedImage = this.sealer.seal(IMAGES_DB, [accountId, personId], input.referenceImage);
    return this.db.transaction(async (tx) => {
      // Of two creates of one id at once, the second waits on the first's key and then inserts nothing.
      const { rowCount } = await tx.query(`INSERT INTO persons
        (account_id, person_id, created, updated, model_id, sealed_template, sealed_image)
        VALUES ($1, $2, $3, $3, $4, $5, $6) ON CONFLICT (account_id, person_id) DO NOTHING`,
      [accountId, personId, now, input.modelId, sealedTemplate, sealedImage]);
      if (!rowCount) return { created: false } as const;
      appendChanges(tx, [{ accountId, personId, op: 'create', modelId: input.modelId,
        current: { modelId: input.modelId, sealedTemplate, created: new Date(now), updated: new Date(now) } }]);
      const person: PersonRecord = { personId, created: now, updated: now, modelId: input.modelId, template: input.template };
      return { created: true, person } as const;
    });
  }

  /** One statement carries every value: callers importing many persons pass them in chunks (e.g. 1000). */
  async createMany(accountId: string, persons: ReadonlyArray<{ personId: string } & TemplateInput>, now: string):
    Promise<{ created: number; skipped: string[] }> {
    const skipped: string[] = [];
    const seen = new Set<string>();
    const fresh: Array<{ personId: string } & TemplateInput> = [];
    for (const p of persons) {
      if (seen.has(p.personId)) {
        skipped.push(p.personId);
      } else {
        seen.add(p.personId);
        fresh.push(p);
      }
    }
    const ids = fresh.map((p) => p.personId);
    const models = fresh.map((p) => p.modelId);
    const templates = fresh.map((p) => this.sealTemplate(accountId, p.personId, p.modelId, p.template));
    const images = fresh.map((p) => this.sealer.seal(IMAGES_DB, [accountId, p.personId], p.referenceImage));
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ person_id: string; model_id: string }>(`INSERT INTO persons
        (account_id, person_id, created, updated, model_id, sealed_template, sealed_image)
        SELECT $1, p, $2, $2, m, t, i FROM unnest($3::text[], $4::text[], $5::bytea[], $6::bytea[]) AS x(p, m, t, i)
        ON CONFLICT (account_id, person_id) DO NOTHING RETURNING person_id, model_id`,
      [accountId, now, ids, models, templates, images]);
      const inserted = new Set(rows.map((r) => r.person_id));
      appendChanges(tx, rows.map((r) => ({ accountId, personId: r.person_id, op: 'create' as const, modelId: r.model_id })));
      return { created: rows.length, skipped: [...skipped, ...ids.filter((id) => !inserted.has(id))] };
    });
  }

  async replace(accountId: string, personId: string, input: TemplateInput, now: string): Promise<PersonRecord | undefined> {
    const sealedTemplate = this.sealTemplate(accountId, personId, input.modelId, input.template);
    const sealedImage = this.sealer.seal(IMAGES_DB, [accountId, personId], input.referenceImage);
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ created: Date }>(`UPDATE persons
        SET updated = $3, model_id = $4, sealed_template = $5, sealed_image = $6
        WHERE account_id = $1 AND person_id = $2 RETURNING created`,
      [accountId, personId, now, input.modelId, sealedTemplate, sealedImage]);
      if (!rows[0]) return undefined;
      appendChanges(tx, [{ accountId, personId, op: 'replace', modelId: input.modelId,
        current: { modelId: input.modelId, sealedTemplate, created: rows[0].created, updated: new Date(now) } }]);
      return { personId, created: rows[0].created.toISOString(), updated: now, modelId: input.modelId, template: input.template };
    });
  }

  async setTemplate(accountId: string, personId: string, modelId: string, template: Float32Array): Promise<boolean> {
    const sealedTemplate = this.sealTemplate(accountId, personId, modelId, template);
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ created: Date; updated: Date }>(
        'UPDATE persons SET model_id = $3, sealed_template = $4 WHERE account_id = $1 AND person_id = $2 RETURNING created, updated',
        [accountId, personId, modelId, sealedTemplate]);
      if (!rows[0]) return false;
      appendChanges(tx, [{ accountId, personId, op: 'template', modelId,
        current: { modelId, sealedTemplate, created: rows[0].created, updated: rows[0].updated } }]);
      return true;
    });
  }

  async remove(accountId: string, personId: string): Promise<PersonRecord | undefined> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<MetaRow & { sealed_template: Buffer }>(`DELETE FROM persons
        WHERE account_id = $1 AND person_id = $2 RETURNING person_id, created, updated, model_id, sealed_template`,
      [accountId, personId]);
      const r = rows[0];
      if (!r) return undefined;
      // Opened before the commit: a template that does not open aborts the removal instead of losing it unseen.
      const template = this.openTemplate(accountId, personId, r.model_id, r.sealed_template);
      appendChanges(tx, [{ accountId, personId, op: 'remove', modelId: r.model_id, current: null }]);
      return { personId, created: r.created.toISOString(), updated: r.updated.toISOString(), modelId: r.model_id, template };
    });
  }

  async *all(): AsyncGenerator<AccountPersonMeta> {
    let after: [string, string] | undefined;
    for (;;) {
      const { rows } = await this.db.query<MetaRow & { account_id: string }>(
        `SELECT account_id, person_id, created, updated, model_id FROM persons
         WHERE $1::text IS NULL OR (account_id, person_id) > ($1, $2)
         ORDER BY account_id, person_id LIMIT ${PAGE}`, [after?.[0] ?? null, after?.[1] ?? null]);
      for (const r of rows) {
        yield { accountId: r.account_id, personId: r.person_id, created: r.created.toISOString(), updated: r.updated.toISOString(), modelId: r.model_id };
      }
      if (rows.length < PAGE) return;
      const last = rows[rows.length - 1];
      after = [last.account_id, last.person_id];
    }
  }

  async templatesOf(accountId: string, personIds: readonly string[]): Promise<Array<Float32Array | undefined>> {
    const { rows } = await this.db.query<{ person_id: string; model_id: string; sealed_template: Buffer }>(
      'SELECT person_id, model_id, sealed_template FROM persons WHERE account_id = $1 AND person_id = ANY($2::text[])',
      [accountId, [...personIds]]);
    const byId = new Map(rows.map((r) => [r.person_id, r]));
    return personIds.map((id) => {
      const r = byId.get(id);
      return r && this.openTemplate(accountId, id, r.model_id, r.sealed_template);
    });
  }

  /** The person's template as the table holds it, sealed; undefined when none of `modelId`. */
  async sealedTemplateOf(accountId: string, personId: string, modelId: string): Promise<Buffer | undefined> {
    const { rows } = await this.db.query<{ sealed_template: Buffer }>(
      'SELECT sealed_template FROM persons WHERE account_id = $1 AND person_id = $2 AND model_id = $3', [accountId, personId, modelId]);
    return rows[0]?.sealed_template;
  }

  async *templateBlocks(modelId: string, accountId?: string): AsyncGenerator<TemplateBlock> {
    let block: { accountId: string; ids: string[]; dimension: number; parts: Buffer[] } | undefined;
    const finish = (): TemplateBlock | undefined => {
      if (!block || block.ids.length === 0) return undefined;
      const out = { accountId: block.accountId, ids: block.ids, dimension: block.dimension, bytes: Buffer.concat(block.parts) };
      block = undefined;
      return out;
    };
    let after: [string, string] | undefined;
    for (;;) {
      const { rows } = await this.db.query<{ account_id: string; person_id: string; sealed_template: Buffer }>(
        `SELECT account_id, person_id, sealed_template FROM persons
         WHERE model_id = $1 AND ($4::text IS NULL OR account_id = $4)
           AND ($2::text IS NULL OR (account_id, person_id) > ($2, $3))
         ORDER BY account_id, person_id LIMIT ${PAGE}`, [modelId, after?.[0] ?? null, after?.[1] ?? null, accountId ?? null]);
      for (const r of rows) {
        const bytes = this.sealer.open(TEMPLATES_PLACE, [r.account_id, r.person_id, modelId], r.sealed_template);
        const dimension = bytes.byteLength / 4;
        if (block && (block.accountId !== r.account_id || block.dimension !== dimension || block.ids.length >= BLOCK)) {
          yield finish()!;
        }
        block ??= { accountId: r.account_id, ids: [], dimension, parts: [] };
        block.ids.push(r.person_id);
        block.parts.push(bytes);
      }
      if (rows.length < PAGE) break;
      const last = rows[rows.length - 1];
      after = [last.account_id, last.person_id];
    }
    const rest = finish();
    if (rest) yield rest;
  }

  /**
   * Every template of `modelId`, unsealed, in blocks of up to 1,024 persons of one account, in no particular
   * order: a node's start-up fill. On the node's pool it reads with `parts` binary COPY streams at once
   * (./template-copy.ts: no hex text, no pages), each parsed on this thread and unsealed in batches
   * (./copy-unsealer.ts): natively on the other cores where the addon can (`unsealer`, else
   * FACE_CHECK_TEMPLATE_UNSEAL=js, decides otherwise), else in JavaScript. Natively, `openSealed` (when given)
   * takes each block still sealed and opens it where it keeps it, instead of `onRows` taking it unsealed.
   * Inside a transaction, or without the data key, it falls back to templateBlocks. A template that does not
   * open rejects (SealError), as does a stream that fails midway: never a partial count. Resolves with the count.
   */
  async copyTemplates(modelId: string, onRows: (rows: OpenedTemplates) => void,
    options: { parts?: number; unsealer?: TemplateUnsealer; openSealed?: SealedBlockConsumer } = {}): Promise<number> {
    if (!(this.db instanceof PostgresPool) || !this.dataKey) {
      let n = 0;
      for await (const block of this.templateBlocks(modelId)) {
        // A copy aligned for Float32Array: the block's bytes may be a view of a larger buffer at any offset.
        const data = new Float32Array(Uint8Array.from(block.bytes).buffer);
        onRows({ accountId: block.accountId, ids: block.ids, data, dimension: block.dimension, release: () => undefined });
        n += block.ids.length;
      }
      return n;
    }
    const settings = { key: this.dataKey, place: TEMPLATES_PLACE, modelId };
    const copyOptions = { parts: options.parts, timeoutMs: Math.max(60_000, 10 * this.db.settings.statementTimeoutMs) };
    const unsealers = new CopyUnsealers(settings, chooseTemplateUnsealer(options.unsealer), onRows, options.openSealed);
    try {
      return await copyTemplateParts(this.db.pool, modelId, () => unsealers.sink(), copyOptions);
    } finally {
      unsealers.close();
    }
  }

  async accountsWithTemplates(modelId: string): Promise<string[]> {
    const { rows } = await this.db.query<{ account_id: string }>(
      'SELECT DISTINCT account_id FROM persons WHERE model_id = $1 ORDER BY account_id', [modelId]);
    return rows.map((r) => r.account_id);
  }

  async templateCount(modelId: string, accountId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>(
      'SELECT count(*) AS n FROM persons WHERE model_id = $1 AND account_id = $2', [modelId, accountId]);
    return Number(rows[0].n);
  }

  /**
   * Persons whose template is of another model than `modelId` (they cannot match until reindexed). Two
   * ranges of the model index, so it reads only those rows: a count(*) of the whole table scans its heap,
   * ~4 KB a person with the templates inline.
   */
  async countOtherModels(modelId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>(
      'SELECT count(*) AS n FROM persons WHERE model_id < $1 OR model_id > $1', [modelId]);
    return Number(rows[0].n);
  }

  async count(accountId?: string): Promise<number> {
    const { rows } = accountId === undefined
      ? await this.db.query<{ n: string }>('SELECT count(*) AS n FROM persons')
      : await this.db.query<{ n: string }>('SELECT count(*) AS n FROM persons WHERE account_id = $1', [accountId]);
    return Number(rows[0].n);
  }

  private sealTemplate(accountId: string, personId: string, modelId: string, template: Float32Array): Buffer {
    return this.sealer.seal(TEMPLATES_PLACE, [accountId, personId, modelId], templateBytes(template));
  }

  /** A template as sealed in the table (e.g. read with the change log by the follower), opened. */
  openTemplate(accountId: string, personId: string, modelId: string, sealed: Uint8Array): Float32Array {
    return templateOf(this.sealer.open(TEMPLATES_PLACE, [accountId, personId, modelId], sealed));
  }
}
