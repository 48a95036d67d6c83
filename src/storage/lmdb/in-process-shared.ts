// What one LMDB process keeps in memory and a PostgreSQL cluster shares in its database (../postgres/): small
// settings (and the sign-in throttle's events, ./sign-in-throttle.ts). On LMDB only one process serves a store
// (./process-lock.ts), so memory is the whole truth for them. The request-signing replay cache is in the store itself
// (../request-signatures.ts): it must outlive a restart.
import crypto from 'node:crypto';
import type { SharedSettings } from '../interfaces';

/** Settings of this process: a secret is random per process, as the back-office's CSRF secret always was. */
export class InProcessSettings implements SharedSettings {
  private readonly secrets = new Map<string, Buffer>();
  private readonly values = new Map<string, string>();

  async secret(name: string, bytes: number): Promise<Buffer> {
    let secret = this.secrets.get(name);
    if (!secret) this.secrets.set(name, (secret = crypto.randomBytes(bytes)));
    return secret;
  }

  async get(name: string): Promise<string | undefined> {
    return this.values.get(name);
  }

  async set(name: string, value: string): Promise<void> {
    this.values.set(name, value);
  }
}
