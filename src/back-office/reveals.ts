// Secrets shown once: a new API key, its private signing key (one download), an activation code just issued.
// Creating happens on a POST that redirects (POST-redirect-GET), so the secret waits here, in memory and
// bound to the session that made it, until the next page takes it. Taking removes it: a reload shows nothing.
// A secret not taken within REVEAL_TTL_MS, or left when the process restarts, is gone; the operator revokes
// the key and makes another. Nothing here is ever written to disk or logged.

export const REVEAL_TTL_MS = 10 * 60_000;
/** Sessions with a secret waiting, at most; past it the oldest is dropped. */
const MAX_WAITING = 10_000;

export interface RevealedApiKey {
  keyId: string;
  key: string;
  role: string;
  label: string;
  servicePublicKey?: string;
}

export interface RevealedCode {
  code: string;
  plan: string;
  expires: string;
}

interface Waiting {
  at: number;
  apiKey?: RevealedApiKey;
  signingKey?: { keyId: string; pem: string };
  activationCode?: RevealedCode;
}

export class OneTimeReveals {
  private readonly waiting = new Map<string, Waiting>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Replaces whatever the session had waiting with these secrets. */
  put(session: string, secrets: Omit<Waiting, 'at'>): void {
    this.sweep();
    this.waiting.delete(session);
    this.waiting.set(session, { ...secrets, at: this.now() });
    if (this.waiting.size > MAX_WAITING) this.waiting.delete(this.waiting.keys().next().value!);
  }

  takeApiKey(session: string): RevealedApiKey | undefined {
    return this.take(session, 'apiKey');
  }

  takeSigningKey(session: string): { keyId: string; pem: string } | undefined {
    return this.take(session, 'signingKey');
  }

  takeActivationCode(session: string): RevealedCode | undefined {
    return this.take(session, 'activationCode');
  }

  hasSigningKey(session: string): boolean {
    return this.live(session)?.signingKey !== undefined;
  }

  /** Forgets the session's secrets (sign-out). */
  forget(session: string): void {
    this.waiting.delete(session);
  }

  private take<K extends 'apiKey' | 'signingKey' | 'activationCode'>(session: string, kind: K): Waiting[K] {
    const entry = this.live(session);
    if (!entry) return undefined;
    const secret = entry[kind];
    delete entry[kind];
    if (!entry.apiKey && !entry.signingKey && !entry.activationCode) this.waiting.delete(session);
    return secret;
  }

  private live(session: string): Waiting | undefined {
    const entry = this.waiting.get(session);
    if (entry && this.now() - entry.at >= REVEAL_TTL_MS) {
      this.waiting.delete(session);
      return undefined;
    }
    return entry;
  }

  private sweep(): void {
    const now = this.now();
    for (const [session, entry] of this.waiting) {
      if (now - entry.at < REVEAL_TTL_MS) break; // insertion order is age order
      this.waiting.delete(session);
    }
  }
}
