// What one LMDB process keeps in memory and a PostgreSQL cluster shares in its database (../postgres/): the
// sign-in throttle and small settings. On LMDB only one process serves a store (./../process-lock.ts), so
// memory is the whole truth for them. The request-signing replay cache is in the store itself
// (../request-signatures.ts): it must outlive a restart.
import crypto from 'node:crypto';
import { SignInThrottle, type ThrottleOptions } from './sign-in-throttle';
import { type SharedSettings, type SharedSignInThrottle, type ThrottleAttempt, type ThrottleKey } from '../interfaces';

/** The in-process throttle behind the shared interface: one event loop makes check-and-count atomic. */
export class InProcessSignInThrottle implements SharedSignInThrottle {
  private readonly throttle: SignInThrottle;

  constructor(options: ThrottleOptions) {
    this.throttle = new SignInThrottle(options);
  }

  async retryAfterSeconds(keys: readonly ThrottleKey[]): Promise<number> {
    return this.throttle.retryAfterSeconds(keys);
  }

  async tryBegin(keys: readonly ThrottleKey[]): Promise<{ attempt: ThrottleAttempt } | { retryAfterSeconds: number }> {
    const wait = this.throttle.retryAfterSeconds(keys);
    if (wait > 0) return { retryAfterSeconds: wait };
    const { keys: names, at } = this.throttle.begin(keys);
    return { attempt: { keys: names, at, ids: [] } };
  }

  async succeeded(attempt: ThrottleAttempt, clearKeys: string | readonly string[]): Promise<void> {
    this.throttle.succeeded({ keys: attempt.keys, at: attempt.at }, clearKeys);
  }

  /** Keys tracked (memory stays bounded). */
  get size(): number {
    return this.throttle.size;
  }
}

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
