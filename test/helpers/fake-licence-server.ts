// A stand-in for the cloud's licence server (the shared wire contract): plain node:http on 127.0.0.1, a test
// RSA key that signs documents with signLicenceDocument, one licence whose grants, limits and refusals a
// test changes at will, and hooks for hostile answers (tampered, replayed, other key, hanging, not JSON).
// It checks each request's body against the contract, so a device sending a bad body learns it (R_003).
import crypto from 'node:crypto';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { GRANTS, type Grant } from '../../src/domain/grants';
import type { LicenceCheckBody } from '../../src/licensing/device/licence-client';
import { DOCUMENT_FORMAT, signLicenceDocument, type LicenceDocument, type SignedLicence } from '../../src/licensing/licence-document';

export interface KeyPair {
  privateKey: string;
  publicKey: string;
}

const pairs: KeyPair[] = [];

/** RSA-2048 test key pairs, made once per process (index 0: the server's; 1: "another key"). */
export function testKeyPair(index = 0): KeyPair {
  while (pairs.length <= index) {
    pairs.push(crypto.generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    }));
  }
  return pairs[index];
}

export function newLicenceKey(): string {
  return `fcl_${crypto.randomBytes(24).toString('base64url')}`;
}

export interface FakeLicence {
  licenceId: string;
  key: string;
  grants: Grant[];
  maxPersons: number | null;
  /** ISO 8601 or null. */
  expires: string | null;
  checkIntervalSeconds: number;
  documentValidSeconds: number;
  /** Set by the first check, as the real server binds a licence. */
  boundTo?: string;
}

/** What the server sends: a status and a JSON value, raw text, or nothing (the request hangs). */
export type Answer = { status: number; json: unknown } | { status: number; text: string } | 'hang';

export class FakeLicenceServer extends EventEmitter {
  readonly checks: LicenceCheckBody[] = [];
  /** Every document the server signed, in order (for replays). */
  readonly issued: SignedLicence[] = [];
  licence: FakeLicence;
  /** The clock documents are issued by. */
  now: () => Date = () => new Date();
  /** Replaces the normal answer (which it receives) when set. */
  respond?: (body: LicenceCheckBody, normal: () => Answer) => Answer;
  private readonly hanging = new Set<http.ServerResponse>();

  private constructor(private readonly server: http.Server, readonly url: string, readonly keys: KeyPair) {
    super();
    this.licence = {
      licenceId: 'lic_test0001', key: newLicenceKey(), grants: [...GRANTS], maxPersons: null, expires: null,
      checkIntervalSeconds: 3600, documentValidSeconds: 86400,
    };
  }

  static async start(keys: KeyPair = testKeyPair(0)): Promise<FakeLicenceServer> {
    let self!: FakeLicenceServer;
    const server = http.createServer((req, res) => self.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new FakeLicenceServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, keys);
    return self;
  }

  /** Writes the server's public key (PEM) into `dir` and returns the file. */
  writePublicKey(dir: string, keys: KeyPair = this.keys): string {
    const file = path.join(dir, `licence-public-${crypto.randomBytes(4).toString('hex')}.pem`);
    fs.writeFileSync(file, keys.publicKey);
    return file;
  }

  /** The document the real server would issue for this check. */
  documentFor(body: LicenceCheckBody, overrides: Partial<LicenceDocument> = {}): LicenceDocument {
    const now = this.now();
    const l = this.licence;
    const validUntil = Math.min(now.getTime() + l.documentValidSeconds * 1000, l.expires ? Date.parse(l.expires) : Infinity);
    return {
      format: DOCUMENT_FORMAT, licenceId: l.licenceId, accountId: 'acct-test', label: 'test board', status: 'active',
      grants: [...l.grants], limits: { maxPersons: l.maxPersons }, licenceExpires: l.expires,
      device: { fingerprint: body.fingerprint },
      licenceKeySha256: crypto.createHash('sha256').update(body.licenceKey, 'utf8').digest('hex'),
      nonce: body.nonce, issued: now.toISOString(), checkIntervalSeconds: l.checkIntervalSeconds,
      validUntil: new Date(validUntil).toISOString(), ...overrides,
    };
  }

  sign(doc: LicenceDocument, keys: KeyPair = this.keys): SignedLicence {
    return signLicenceDocument(doc, keys.privateKey);
  }

  /** Stops listening and cuts hanging requests: afterwards the URL refuses connections. */
  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private normal(body: LicenceCheckBody): Answer {
    const l = this.licence;
    const refuse = (status: number, code: string, message: string): Answer => ({ status, json: { code, message } });
    if (body.licenceKey !== l.key) return refuse(401, 'LC_005', 'Unknown licence key: check [licence] key');
    if (l.expires && Date.parse(l.expires) <= this.now().getTime()) return refuse(403, 'LC_007', `Licence expired: licence ${l.licenceId} expired on ${l.expires}`);
    if (l.boundTo && l.boundTo !== body.fingerprint) {
      return refuse(403, 'LC_008', 'Licence bound to another device: release the binding in the back-office or with face-check licence release');
    }
    l.boundTo = body.fingerprint;
    const signed = this.sign(this.documentFor(body));
    this.issued.push(signed);
    return { status: 200, json: signed };
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let answer: Answer;
      let body: LicenceCheckBody | undefined;
      if (req.method !== 'POST' || req.url !== '/licence/v1/check') {
        answer = { status: 404, json: { code: 'NOT_FOUND', message: 'Not found' } };
      } else {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as LicenceCheckBody;
        } catch {
          body = undefined;
        }
        const problem = body === undefined ? 'not JSON' : contractProblem(body);
        if (problem || !body) answer = { status: 400, json: { code: 'R_003', message: `Fields validation exception: ${problem}` } };
        else {
          this.checks.push(body);
          const b = body;
          answer = this.respond ? this.respond(b, () => this.normal(b)) : this.normal(b);
        }
      }
      if (answer === 'hang') {
        this.hanging.add(res);
        res.once('close', () => this.hanging.delete(res));
      } else if ('json' in answer) {
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.json));
      } else {
        res.writeHead(answer.status, { 'content-type': 'text/html' }).end(answer.text);
      }
      this.emit('check', body);
    });
  }
}

/** Why a check body breaks the wire contract, or undefined. */
export function contractProblem(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return 'body';
  const b = body as Record<string, unknown>;
  const keys = Object.keys(b).filter((k) => k !== 'usageReport').sort().join(',');
  if (keys !== 'fingerprint,licenceKey,nonce,persons,usage,version') return `fields ${keys}`;
  if (b.usageReport !== undefined) {
    const r = b.usageReport as Record<string, unknown> | null;
    if (typeof r !== 'object' || r === null || Object.keys(r).sort().join(',') !== 'number,series') return 'usageReport';
    if (typeof r.series !== 'string' || !/^[A-Za-z0-9_-]{16,64}$/.test(r.series) || !Number.isSafeInteger(r.number) || (r.number as number) < 1) {
      return 'usageReport fields';
    }
  }
  if (typeof b.licenceKey !== 'string' || !/^fcl_[A-Za-z0-9_-]{32}$/.test(b.licenceKey)) return 'licenceKey';
  if (typeof b.fingerprint !== 'string' || !/^[0-9a-f]{64}$/.test(b.fingerprint)) return 'fingerprint';
  if (typeof b.nonce !== 'string' || !/^[A-Za-z0-9_-]{16,64}$/.test(b.nonce)) return 'nonce';
  if (typeof b.version !== 'string' || b.version.length > 64) return 'version';
  if (!Number.isSafeInteger(b.persons) || (b.persons as number) < 0) return 'persons';
  if (!Array.isArray(b.usage) || b.usage.length > 400) return 'usage';
  for (const u of b.usage as Array<Record<string, unknown>>) {
    if (typeof u !== 'object' || u === null || Object.keys(u).sort().join(',') !== 'day,operation,requests') return 'usage entry';
    if (typeof u.day !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(u.day)) return 'usage day';
    if (!(GRANTS as readonly unknown[]).includes(u.operation)) return 'usage operation';
    if (!Number.isSafeInteger(u.requests) || (u.requests as number) < 0) return 'usage requests';
  }
  return undefined;
}
