// Operators' passwords, stored only as a memory-hard scrypt hash: "scrypt$N$r$p$salt_b64$hash_b64".
// scrypt runs on libuv's thread pool, so a sign-in does not stall the event loop. Verification compares in
// constant time, and an unknown e-mail address is answered after the same work (dummyVerify), so the time a
// sign-in takes does not tell whether an address is registered.
import crypto from 'node:crypto';
import { normalisedPassword } from './password-policy';

/** 2^15 x 8 x 128 bytes = 32 MiB of memory per hash: costly for a guesser's GPU, a fraction of a second for us. */
const COST = { N: 2 ** 15, r: 8, p: 1 };
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** Bounds on parameters read back from the store, so a damaged record cannot ask for gigabytes. */
const MAX_N = 2 ** 20;
const MAX_R = 16;
const MAX_P = 4;

interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

function scrypt(password: string, salt: Buffer, length: number, params: ScryptParams): Promise<Buffer> {
  // Node refuses when 128*N*r*p reaches maxmem; twice the need leaves room for its own overhead.
  const maxmem = 2 * 128 * params.N * params.r * params.p;
  return new Promise((resolve, reject) => {
    crypto.scrypt(password, salt, length, { ...params, maxmem }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/**
 * The same password typed on two keyboards may arrive composed or decomposed, or with compatibility forms
 * (full-width letters, ligatures); NFKC makes them one (NIST SP 800-63B 5.1.1.2), as the password rules
 * check it (./password-policy.ts).
 */
function normalised(password: string): string {
  return normalisedPassword(password);
}

/** How hashes made before NFKC normalised the password (NFC only); such a password still signs in. */
function legacyNormalised(password: string): string {
  return password.normalize('NFC');
}

export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.randomBytes(SALT_BYTES);
  const hash = await scrypt(normalised(password), salt, HASH_BYTES, COST);
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64'), hash.toString('base64')].join('$');
}

interface ParsedHash extends ScryptParams {
  salt: Buffer;
  hash: Buffer;
}

function parse(stored: string): ParsedHash | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [N, r, p] = parts.slice(1, 4).map((s) => (/^\d{1,8}$/.test(s) ? Number(s) : NaN));
  const powerOfTwo = N > 1 && (N & (N - 1)) === 0;
  if (!powerOfTwo || N > MAX_N || !(r >= 1 && r <= MAX_R) || !(p >= 1 && p <= MAX_P)) return undefined;
  const salt = Buffer.from(parts[4], 'base64');
  const hash = Buffer.from(parts[5], 'base64');
  if (salt.length < SALT_BYTES || hash.length < 16) return undefined;
  return { N, r, p, salt, hash };
}

/** True when `password` is the one `stored` was made from; false also for a malformed `stored`. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parse(stored);
  if (!parsed) return false;
  const candidate = await scrypt(normalised(password), parsed.salt, parsed.hash.length, parsed);
  if (crypto.timingSafeEqual(candidate, parsed.hash)) return true;
  // Only a password whose NFKC and NFC forms differ (compatibility characters) costs a second hash.
  const legacy = legacyNormalised(password);
  if (legacy === normalised(password)) return false;
  return crypto.timingSafeEqual(await scrypt(legacy, parsed.salt, parsed.hash.length, parsed), parsed.hash);
}

let dummyHash: Promise<string> | undefined;

/**
 * The work of a real verification against a hash no password matches (its salt and password are random):
 * answers an unknown e-mail address in the time a known one takes. Always false.
 */
export async function dummyVerify(password: string): Promise<false> {
  dummyHash ??= hashPassword(crypto.randomBytes(32).toString('base64'));
  await verifyPassword(password, await dummyHash);
  return false;
}
