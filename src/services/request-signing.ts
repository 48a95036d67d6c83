// Enterprise request signing (spec 5). What the spec leaves open is decided here and in the README:
// - signature = RSASSA-PKCS1-v1_5 with SHA-256 (the SHA-256 hash, encrypted with the RSA private key; the
//   verifier recovers it with the public key and compares it with its own hash), base64 in the header;
// - Timestamp = Unix time in whole seconds, decimal;
// - signed text = base URL + URI (path and query as sent) + body (exactly the bytes sent, empty when none)
//   + the Timestamp header's text, UTF-8.
// A request is refused (401) when either header is missing or malformed, its timestamp is more than
// max_age seconds from the server's clock, the signature is not in its one canonical spelling (padded
// base64 with zero unused bits, exactly the key's modulus long), it does not verify, or the same signed text
// was already accepted for that key within the window (a replay). The replay cache is keyed on what was
// signed, never on the header's text: no re-spelling of one signature can make a second acceptance.
import crypto from 'node:crypto';
import { promisify } from 'node:util';
import type { ErrorCatalog } from '../errors';
import type { ReplayCache } from '../storage/interfaces';

// The callback form runs on libuv's thread pool: an RSA-2048 private-key operation is about a millisecond.
const signAsync = promisify(crypto.sign) as (algorithm: string, data: Buffer, key: crypto.KeyObject) => Promise<Buffer>;

function signedText(baseUrl: string, uri: string, body: string, timestamp: string): Buffer {
  return Buffer.from(`${baseUrl}${uri}${body}${timestamp}`, 'utf8');
}

function verify(publicKey: crypto.KeyObject, text: Buffer, signature: Buffer): boolean {
  try {
    return crypto.verify('sha256', text, publicKey, signature);
  } catch {
    return false;  // an unusable key or signature is a failed check, not a 500
  }
}

/** Throws unless `pem` is an RSA public key of at least 2048 bits; returns it normalised (SPKI PEM). */
export function checkedPublicKey(pem: string): string {
  let key: crypto.KeyObject;
  try {
    key = crypto.createPublicKey(pem);
  } catch (err) {
    throw new Error(`not a public key: ${(err as Error).message}`);
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (key.asymmetricKeyType !== 'rsa' || bits < 2048) {
    throw new Error(`need an RSA key of at least 2048 bits, got ${key.asymmetricKeyType} ${bits}`);
  }
  return key.export({ type: 'spki', format: 'pem' }).toString();
}

const TIMESTAMP = /^\d{1,12}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The signature's bytes when `text` is their one canonical spelling: padded standard base64 whose unused
 * bits are zero (Node's decoder ignores them and accepts missing padding, so 48 spellings of a 256-byte
 * signature would decode alike). Undefined otherwise.
 */
function canonicalSignatureBytes(text: string): Buffer | undefined {
  if (!BASE64.test(text) || text.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : undefined;
}

/** What the replay cache remembers of an accepted request: the key (its SPKI DER) and the exact text it signed. */
function replayId(keyDer: Buffer, text: Buffer): string {
  return crypto.createHash('sha256').update(keyDer).update(text).digest('hex');
}

interface ParsedKey {
  key: crypto.KeyObject;
  der: Buffer;
}

export interface SignedRequest {
  publicKey: string;
  baseUrl: string;
  uri: string;
  body: string;
  signature: string | undefined;
  timestamp: string | undefined;
}

export class RequestSigning {
  /** Parsed keys: parsing a PEM costs more than the RSA operation itself. */
  private readonly publicKeys = new Map<string, ParsedKey | null>();
  private privateKey?: Promise<crypto.KeyObject>;

  constructor(
    private readonly errors: ErrorCatalog,
    private readonly serviceKey: () => Promise<{ privateKey: string }>,
    private readonly maxAgeSeconds: number,
    private readonly now: () => Date,
    /** Accepted signatures until they leave the window: shared by every node of a cluster. */
    private readonly replays: ReplayCache,
  ) {}

  /** Loads (on first start: makes) the service key now rather than on the first signed response. */
  async ready(): Promise<void> {
    await this.servicePrivateKey();
  }

  /** Throws the 401 ApiError unless the request is signed by the key's owner, recently, once. */
  async verifyRequest(r: SignedRequest): Promise<void> {
    const unauthorized = (why: string) => this.errors.create('Unauthorized', `request signature: ${why}`);
    if (!r.signature || !r.timestamp) throw unauthorized('this key signs its requests: Signature and Timestamp headers needed');
    if (!TIMESTAMP.test(r.timestamp)) throw unauthorized('Timestamp must be Unix time in seconds');
    const signature = canonicalSignatureBytes(r.signature);
    if (!signature) throw unauthorized('Signature must be padded base64 in its canonical form (unused bits zero)');
    const nowMs = this.now().getTime();
    if (Math.abs(nowMs / 1000 - Number(r.timestamp)) > this.maxAgeSeconds) {
      throw unauthorized(`Timestamp is more than ${this.maxAgeSeconds} s from the server's clock`);
    }
    const parsed = this.publicKeyOf(r.publicKey);
    const text = signedText(r.baseUrl, r.uri, r.body, r.timestamp);
    const modulusBytes = Math.ceil((parsed?.key.asymmetricKeyDetails?.modulusLength ?? 0) / 8);
    if (parsed && signature.length !== modulusBytes) throw unauthorized(`Signature must be ${modulusBytes} bytes (the key's modulus)`);
    if (!parsed || !verify(parsed.key, text, signature)) {
      throw unauthorized('does not verify (base URL + URI + body + Timestamp, SHA-256, RSA)');
    }
    const until = new Date(nowMs + 2 * this.maxAgeSeconds * 1000);
    if (!await this.replays.claim(replayId(parsed.der, text), new Date(nowMs), until)) throw unauthorized('already used (replay)');
  }

  /** Signature and Timestamp headers for a response body. */
  async signResponse(baseUrl: string, uri: string, body: string): Promise<{ signature: string; timestamp: string }> {
    const timestamp = String(Math.floor(this.now().getTime() / 1000));
    const signature = await signAsync('sha256', signedText(baseUrl, uri, body, timestamp), await this.servicePrivateKey());
    return { signature: signature.toString('base64'), timestamp };
  }

  private servicePrivateKey(): Promise<crypto.KeyObject> {
    this.privateKey ??= this.serviceKey().then(({ privateKey }) => crypto.createPrivateKey(privateKey));
    return this.privateKey;
  }

  /** The parsed public key, or null when the stored text is not one (then nothing verifies). */
  private publicKeyOf(pem: string): ParsedKey | null {
    let parsed = this.publicKeys.get(pem);
    if (parsed === undefined) {
      try {
        const key = crypto.createPublicKey(pem);
        parsed = { key, der: key.export({ type: 'spki', format: 'der' }) };
      } catch {
        parsed = null;
      }
      if (this.publicKeys.size >= 1024) this.publicKeys.clear();  // keys are few; bound it anyway
      this.publicKeys.set(pem, parsed);
    }
    return parsed;
  }

}
