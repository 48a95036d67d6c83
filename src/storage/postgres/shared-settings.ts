// Small settings every node shares. A secret (e.g. the back-office CSRF secret, which every node must use
// for a form served by one to be accepted by another) is made once by whichever node asks first and sealed
// (place ["settings", name]) before it is written; plain settings are UTF-8 text.
import crypto from 'node:crypto';
import type { Sealer } from '../crypto/sealer';
import type { SharedSettings } from '../interfaces';
import type { Db } from './pool';

export const SETTINGS_PLACE = 'settings';

export class PgSharedSettings implements SharedSettings {
  constructor(private readonly db: Db, private readonly sealer: Sealer) {}

  async secret(name: string, bytes: number): Promise<Buffer> {
    if (!Number.isInteger(bytes) || bytes < 16) throw new RangeError(`secret ${name}: at least 16 bytes, not ${bytes}`);
    const fresh = crypto.randomBytes(bytes);
    const sealed = this.sealer.seal(SETTINGS_PLACE, name, fresh);
    fresh.fill(0);
    // Two nodes asking first at once: the first insert stays and both read it.
    await this.db.query('INSERT INTO settings (name, value, sealed) VALUES ($1, $2, true) ON CONFLICT (name) DO NOTHING',
      [name, sealed]);
    const { rows } = await this.db.query<{ value: Buffer; sealed: boolean }>('SELECT value, sealed FROM settings WHERE name = $1', [name]);
    if (!rows[0]?.sealed) throw new Error(`setting ${name} is a plain setting, not a secret`);
    const secret = this.sealer.open(SETTINGS_PLACE, name, rows[0].value);
    if (secret.length !== bytes) throw new Error(`secret ${name} holds ${secret.length} bytes, ${bytes} asked for`);
    return secret;
  }

  async get(name: string): Promise<string | undefined> {
    const { rows } = await this.db.query<{ value: Buffer; sealed: boolean }>('SELECT value, sealed FROM settings WHERE name = $1', [name]);
    if (!rows[0]) return undefined;
    if (rows[0].sealed) throw new Error(`setting ${name} is a secret: read it with secret()`);
    return rows[0].value.toString('utf8');
  }

  async set(name: string, value: string): Promise<void> {
    const { rowCount } = await this.db.query(`INSERT INTO settings (name, value, sealed) VALUES ($1, $2, false)
      ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value WHERE NOT settings.sealed`, [name, Buffer.from(value, 'utf8')]);
    if (!rowCount) throw new Error(`setting ${name} is a secret and is not overwritten`);
  }
}
