// Cross-site request forgery: every form carries a per-session token in a hidden field, and a POST whose token
// is missing or wrong changes nothing (403). The token is an HMAC of the session token's SHA-256 under a secret
// of this process: a page of another site can neither read it (same-origin policy) nor compute it (it knows
// neither the session nor the secret). SameSite=Strict cookies already keep most cross-site posts out; the
// token also covers browsers and proxies that do not honour SameSite.
//
// The secret comes from the store's shared settings: on LMDB it lives in memory only (after a restart, a form
// loaded before it is refused once and works after a reload: the page explains); on PostgreSQL every node
// shares one, sealed in the database, so a form served by one node posts to any other.
import crypto from 'node:crypto';

export const CSRF_FIELD = 'csrf';

export class CsrfTokens {
  private readonly secret: Buffer;

  constructor(secret: Buffer = crypto.randomBytes(32)) {
    if (secret.length < 32) throw new RangeError('the CSRF secret needs 32 bytes or more');
    this.secret = secret;
  }

  /** The token the forms of the session whose token hashes to `sessionHash` carry. */
  tokenFor(sessionHash: string): string {
    return crypto.createHmac('sha256', this.secret).update(`back-office csrf\n${sessionHash}`).digest('base64url');
  }

  /** True only for the session's own token (compared in constant time). */
  verify(sessionHash: string, given: unknown): boolean {
    if (typeof given !== 'string' || given.length === 0) return false;
    const expected = Buffer.from(this.tokenFor(sessionHash));
    const actual = Buffer.from(given);
    return actual.length === expected.length && crypto.timingSafeEqual(actual, expected);
  }
}
