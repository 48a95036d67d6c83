// One licence check of a device with the cloud's licence server: POST {server_url}/licence/v1/check with a
// fresh nonce, the answer verified against the pinned public key and checked against this check (nonce,
// fingerprint, licence key, time) before any of it is believed. Every failure is sorted into what the
// device can do about it:
//   unreachable - no answer worth reading (network error, timeout, 5xx, 429, not JSON): try again later;
//   refused     - the licence server said no (an LC_xxx error body): the licence itself is the problem;
//   invalid     - an answer that is not a licence for this check (bad signature or shape, another nonce,
//                 device or key, run out, or an error body that is not a licence refusal).
import crypto from 'node:crypto';
import type { Grant } from '../../domain/grants';
import {
  checkDocumentFor, LicenceDocumentError, verifyLicenceDocument, type LicenceDocument, type SignedLicence,
} from '../licence-document';

export const CHECK_PATH = '/licence/v1/check';
/** A licence check's answer is a few KiB; anything much larger is not one, and is not read whole. */
const MAX_ANSWER_BYTES = 256 * 1024;

export interface UsageEntry {
  /** UTC day, YYYY-MM-DD. */
  day: string;
  operation: Grant;
  requests: number;
}

/** The check's body (the shared wire contract). */
export interface LicenceCheckBody {
  licenceKey: string;
  fingerprint: string;
  nonce: string;
  version: string;
  persons: number;
  usage: UsageEntry[];
  /** Names `usage` for the cloud, which adds each number of a series once (docs/licences.md); absent from older devices. */
  usageReport?: UsageReportId;
}

/** A usage report's identity: the device store's random series and the report's number in it. */
export interface UsageReportId {
  series: string;
  number: number;
}

export type CheckOutcome =
  | { kind: 'ok'; document: LicenceDocument; signed: SignedLicence }
  | { kind: 'unreachable'; reason: string }
  | { kind: 'refused'; status: number; code: string; message: string }
  /** `code`: the error code of a body the server refused (R_003: the check's own body was not believed). */
  | { kind: 'invalid'; reason: string; code?: string };

export interface LicenceClientOptions {
  /** [licence] server_url, without a trailing slash. */
  serverUrl: string;
  licenceKey: string;
  /** The pinned public key every document must verify against. */
  publicKey: crypto.KeyObject;
  fingerprint: string;
  /** This program's version, sent with each check. */
  version: string;
  /** [licence] check_timeout_ms: the whole exchange, answer body included. */
  timeoutMs: number;
  now?: () => Date;
}

export class LicenceClient {
  private readonly now: () => Date;

  constructor(private readonly opts: LicenceClientOptions) {
    this.now = opts.now ?? (() => new Date());
  }

  get serverUrl(): string {
    return this.opts.serverUrl;
  }

  /** One check; never throws: every failure is an outcome. `signal` aborts it early (closing). */
  async check(report: { persons: number; usage: UsageEntry[]; usageReport?: UsageReportId }, signal?: AbortSignal): Promise<CheckOutcome> {
    const nonce = crypto.randomBytes(24).toString('base64url');
    const body: LicenceCheckBody = {
      licenceKey: this.opts.licenceKey, fingerprint: this.opts.fingerprint, nonce, version: this.opts.version,
      persons: report.persons, usage: report.usage, ...(report.usageReport ? { usageReport: report.usageReport } : {}),
    };
    const timeout = AbortSignal.timeout(this.opts.timeoutMs);
    let status: number;
    let text: string;
    try {
      const res = await fetch(`${this.opts.serverUrl}${CHECK_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
      });
      status = res.status;
      text = await readLimited(res, MAX_ANSWER_BYTES);
    } catch (err) {
      if (timeout.aborted) return { kind: 'unreachable', reason: `no answer within ${this.opts.timeoutMs} ms` };
      return { kind: 'unreachable', reason: networkReason(err) };
    }
    if (status >= 500 || status === 429) return { kind: 'unreachable', reason: `the licence server answered ${status}` };
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      return { kind: 'unreachable', reason: `the licence server's answer (${status}) is not JSON` };
    }
    if (status !== 200) return refusalOf(status, answer);
    try {
      const document = verifyLicenceDocument(answer, this.opts.publicKey);
      checkDocumentFor(document, { nonce, fingerprint: this.opts.fingerprint, licenceKey: this.opts.licenceKey, now: this.now() });
      return { kind: 'ok', document, signed: answer as SignedLicence };
    } catch (err) {
      if (err instanceof LicenceDocumentError) return { kind: 'invalid', reason: err.message };
      throw err;
    }
  }
}

function refusalOf(status: number, answer: unknown): CheckOutcome {
  const { code, message } = (typeof answer === 'object' && answer !== null ? answer : {}) as Record<string, unknown>;
  if (typeof code === 'string' && typeof message === 'string' && /^LC_\d{3}$/.test(code)) {
    return { kind: 'refused', status, code, message };
  }
  const said = typeof code === 'string' ? ` ${code}${typeof message === 'string' ? `: ${message}` : ''}` : '';
  const reason = `the licence server answered ${status}${said}, not a licence or a licence refusal`;
  return status === 400 && typeof code === 'string' ? { kind: 'invalid', reason, code } : { kind: 'invalid', reason };
}

/** The body as text, refused (thrown) past `max` bytes without reading the rest. */
async function readLimited(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      throw new Error(`the answer is larger than ${max} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** fetch's "fetch failed" says nothing; its cause (ECONNREFUSED, ENOTFOUND, ...) does. */
function networkReason(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return cause?.message ?? (err as Error).message;
}
