// Request signing for enterprise keys with node:crypto (docs/request-signing.md of the service, implemented
// once): RSASSA-PKCS1-v1_5/SHA-256 of base URL + URI + body + Timestamp, base64, Timestamp in Unix seconds.
// Every answer must carry the service's Signature and Timestamp of base URL + URI + answer body + Timestamp.
import * as crypto from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { RequestSigner } from './client';

export type KeyInput = string | Buffer | KeyObject;

export interface NodeSignerOptions {
  /** The key's private half (PEM, PKCS#8 or PKCS#1) as `face-check keys create --signing` printed it. */
  signingKey: KeyInput;
  /** The service's public key (PEM), from `face-check keys service-public-key`. */
  servicePublicKey: KeyInput;
  /** How far an answer's Timestamp may be from this machine's clock (default 300 s, the service's own window). */
  maxAgeSeconds?: number;
  /** The clock (ms). */
  now?: () => number;
}

export class NodeRequestSigner implements RequestSigner {
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  private readonly maxAgeSeconds: number;
  private readonly now: () => number;
  /** Hash of each signed text (without Timestamp) -> the last second it was signed in. */
  private readonly recent = new Map<string, number>();

  constructor(opts: NodeSignerOptions) {
    this.privateKey = isKeyObject(opts.signingKey) ? opts.signingKey : crypto.createPrivateKey(opts.signingKey);
    this.publicKey = isKeyObject(opts.servicePublicKey) ? opts.servicePublicKey : crypto.createPublicKey(opts.servicePublicKey);
    this.maxAgeSeconds = opts.maxAgeSeconds ?? 300;
    this.now = opts.now ?? Date.now;
  }

  async signRequest(baseUrl: string, uri: string, body: string): Promise<{ signature: string; timestamp: string }> {
    const text = `${baseUrl}${uri}${body}`;
    const digest = crypto.createHash('sha256').update(text, 'utf8').digest('base64');
    // The service takes one signed text once per second (replay protection): the same request again in the same
    // second (a GET repeated, a DELETE after a GET of one id) waits for the next second instead of being refused.
    for (;;) {
      const second = Math.floor(this.now() / 1000);
      for (const [k, s] of this.recent) if (s < second) this.recent.delete(k);
      if (this.recent.get(digest) !== second) {
        this.recent.set(digest, second);
        const timestamp = String(second);
        const signature = crypto.sign('sha256', Buffer.from(`${text}${timestamp}`, 'utf8'), this.privateKey).toString('base64');
        return { signature, timestamp };
      }
      await new Promise((resolve) => setTimeout(resolve, (second + 1) * 1000 - this.now() + 1));
    }
  }

  verifyResponse(baseUrl: string, uri: string, body: string, signature: string | null, timestamp: string | null): void {
    if (!signature || !timestamp) throw new Error('it carries no Signature and Timestamp (signing keys get signed answers only)');
    if (!/^\d{1,12}$/.test(timestamp)) throw new Error(`its Timestamp ${JSON.stringify(timestamp.slice(0, 40))} is not Unix seconds`);
    const skew = Math.abs(Number(timestamp) - this.now() / 1000);
    if (skew > this.maxAgeSeconds) throw new Error(`its Timestamp is ${Math.round(skew)} s from this machine's clock (over ${this.maxAgeSeconds} s)`);
    const bytes = Buffer.from(signature, 'base64');
    if (bytes.length === 0 || bytes.toString('base64') !== signature) throw new Error('its Signature is not canonical base64');
    const ok = crypto.verify('sha256', Buffer.from(`${baseUrl}${uri}${body}${timestamp}`, 'utf8'), this.publicKey, bytes);
    if (!ok) throw new Error('its Signature does not verify with the service public key');
  }
}

function isKeyObject(k: KeyInput): k is KeyObject {
  return typeof k === 'object' && !Buffer.isBuffer(k) && 'asymmetricKeyType' in k;
}
