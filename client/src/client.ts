// The client: one method per operation of the interface specification, in device and cloud mode alike.
// This module uses only fetch, AbortSignal and timers, so a browser page can bundle it; file paths and request
// signing come in through the hooks `readFile` and `signer`, which the Node entry (node.ts) fills.
import { toBase64 } from './base64';
import {
  API_VERSION, DEFAULT_COMPARE_THRESHOLD, OPERATIONS, type CompareResult, type LiveFace, type Mode, type OperationName,
  type Person,
} from './contract';
import {
  ApiVersionError, FaceCheckError, NetworkError, OperationNotSupportedError, RequestTimeoutError, ResponseSignatureError,
  serviceError, UnexpectedResponseError,
} from './errors';

/**
 * A photo: its bytes (a Node Buffer is a Uint8Array), an ArrayBuffer, a Blob (browser: `canvas.toBlob`,
 * a file input), a file path (Node entry only), or `{ faceImage: base64 }` when it is already base64.
 */
export type ImageInput = Uint8Array | ArrayBuffer | Blob | string | { faceImage: string };
/** A photo, or (device mode) the faceKey of a live capture: `{ faceKey }` or the LiveFace itself. */
export type FaceInput = ImageInput | { faceKey: string };

/** Signs requests and checks the service's signature of each answer (enterprise keys). */
export interface RequestSigner {
  /** The Signature and Timestamp headers for this request. */
  signRequest(baseUrl: string, uri: string, body: string): Promise<{ signature: string; timestamp: string }>;
  /** Throws (with the reason as message) unless the answer carries a valid, fresh service signature. */
  verifyResponse(baseUrl: string, uri: string, body: string, signature: string | null, timestamp: string | null): void;
}

export interface ClientOptions {
  /** The service's address, e.g. `http://127.0.0.1:8080` (a path prefix is kept). */
  baseUrl: string;
  /** The Api-Key. */
  apiKey: string;
  /** Per attempt, until the whole answer is read (default 30 000 ms). */
  timeoutMs?: number;
  /** Retries of a retryable failure (default 2; 0 turns retrying off). */
  retries?: number;
  /** A Retry-After longer than this is not waited for: the 503 is thrown (default 10 000 ms). */
  maxRetryDelayMs?: number;
  /** Ask the service's /openapi.json once, before the first call, whether it speaks API v6 (default true). */
  checkVersion?: boolean;
  /** The base URL that requests are signed with, when the service's [auth] public_base_url differs from baseUrl. */
  signedBaseUrl?: string;
  /** Hooks (the Node entry sets them). */
  signer?: RequestSigner;
  readFile?: (path: string) => Promise<Uint8Array>;
  /** Another fetch (default: the global one). */
  fetch?: typeof fetch;
}

/** Per call. */
export interface CallOptions {
  /** Abort the call (the promise rejects with the signal's reason, e.g. an AbortError DOMException). */
  signal?: AbortSignal;
  /** Overrides the client's timeoutMs for this call. */
  timeoutMs?: number;
}

export interface CompareOptions extends CallOptions {
  /** Percent 0..100 a match needs (default: the service's, 80 in the spec). */
  similarityThreshold?: number;
}

/** When an operation may be sent again after a failure without changing what it does. */
const RETRY_503: ReadonlySet<OperationName> = new Set(['liveFace', 'updatePerson', 'removePerson', 'getPerson', 'identify', 'verify', 'compare']);
/** A lost answer (network error) may have followed a completed request: only repeat what is harmless twice. */
const RETRY_NETWORK: ReadonlySet<OperationName> = new Set(['liveFace', 'updatePerson', 'getPerson', 'identify', 'verify', 'compare']);
const NETWORK_RETRY_DELAY_MS = 200;

export class FaceCheckClient {
  private readonly baseUrl: string;
  private readonly signedBaseUrl: string;
  private readonly fetchFn: typeof fetch;
  private versionProbe?: Promise<Mode>;

  constructor(private readonly options: ClientOptions) {
    if (!options.baseUrl) throw new FaceCheckError('baseUrl is required');
    if (!options.apiKey) throw new FaceCheckError('apiKey is required');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.signedBaseUrl = (options.signedBaseUrl ?? this.baseUrl).replace(/\/+$/, '');
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /** Device only: the live face in front of the camera now or less than 1 s ago (spec 4.1). */
  async liveFace(opts: CallOptions = {}): Promise<LiveFace> {
    const body = await this.send('liveFace', undefined, undefined, opts);
    return { faceKey: body.faceKey as string, faceImage: body.faceImage as string };
  }

  /** Enrols a new person (spec 4.2). Never retried: see the README ("Retries"). */
  async createPerson(personId: string, face: FaceInput, opts: CallOptions = {}): Promise<Person> {
    return person(await this.send('createPerson', personId, await this.faceBody(face), opts));
  }

  /** Replaces an enrolled person's reference face (spec 4.3). */
  async updatePerson(personId: string, face: FaceInput, opts: CallOptions = {}): Promise<Person> {
    return person(await this.send('updatePerson', personId, await this.faceBody(face), opts));
  }

  /** Removes a person; resolves with the removed record (spec 4.4). */
  async removePerson(personId: string, opts: CallOptions = {}): Promise<Person> {
    return person(await this.send('removePerson', personId, undefined, opts));
  }

  /** Looks a person up (spec 4.5); PersonNotFoundError when absent. */
  async getPerson(personId: string, opts: CallOptions = {}): Promise<Person> {
    return person(await this.send('getPerson', personId, undefined, opts));
  }

  /** 1:N: the best-matching enrolled person (spec 4.6); NoPersonMatchedError when nobody matches. */
  async identify(face: FaceInput, opts: CallOptions = {}): Promise<Person> {
    return person(await this.send('identify', undefined, await this.faceBody(face), opts));
  }

  /** 1:1: resolves with the person when the face is theirs (spec 4.7); NoPersonMatchedError when it is not. */
  async verify(personId: string, face: FaceInput, opts: CallOptions = {}): Promise<Person> {
    return person(await this.send('verify', personId, await this.faceBody(face), opts));
  }

  /** Compares the largest face of `source` with the largest face of `target` (spec 4.8). */
  async compare(target: ImageInput, source: ImageInput, opts: CompareOptions = {}): Promise<CompareResult> {
    const body: Record<string, unknown> = {
      targetImage: await this.imageBase64(target), sourceImage: await this.imageBase64(source),
    };
    if (opts.similarityThreshold !== undefined) body.similarityThreshold = opts.similarityThreshold;
    const answer = await this.send('compare', undefined, body, opts);
    if (typeof answer.facesMatched === 'number') return { matched: answer.facesMatched >= 1, similarity: null };
    if (typeof answer.similarity === 'number') {
      return { matched: answer.similarity >= (opts.similarityThreshold ?? DEFAULT_COMPARE_THRESHOLD), similarity: answer.similarity };
    }
    throw new UnexpectedResponseError('compare answered without facesMatched or similarity', 200, null);
  }

  /** The service's mode ('device' or 'cloud'), from its OpenAPI document (the same probe as the version check). */
  mode(): Promise<Mode> {
    return this.probe();
  }

  // ---- inputs --------------------------------------------------------------------------------------------

  private async faceBody(face: FaceInput): Promise<Record<string, string>> {
    if (typeof face === 'object' && face !== null && 'faceKey' in face && typeof face.faceKey === 'string') {
      return { faceKey: face.faceKey };
    }
    return { faceImage: await this.imageBase64(face as ImageInput) };
  }

  private async imageBase64(image: ImageInput): Promise<string> {
    if (typeof image === 'string') {
      if (!this.options.readFile) throw new FaceCheckError('a file path needs the Node entry (@face-check/client/node); pass the bytes here');
      return toBase64(await this.options.readFile(image));
    }
    if (image instanceof Uint8Array) return toBase64(image);
    if (image instanceof ArrayBuffer) return toBase64(new Uint8Array(image));
    if (typeof Blob !== 'undefined' && image instanceof Blob) return toBase64(new Uint8Array(await image.arrayBuffer()));
    if (typeof image === 'object' && image !== null && typeof (image as { faceImage?: unknown }).faceImage === 'string') {
      return (image as { faceImage: string }).faceImage;
    }
    throw new FaceCheckError('an image is a Uint8Array/Buffer, ArrayBuffer, Blob, file path or { faceImage: base64 }');
  }

  // ---- the exchange --------------------------------------------------------------------------------------

  /** Learns the service's API version and mode once; an ApiVersionError sticks, other failures are retried next call. */
  private probe(): Promise<Mode> {
    this.versionProbe ??= this.readVersion().catch((err: unknown) => {
      if (!(err instanceof ApiVersionError)) this.versionProbe = undefined;
      throw err;
    });
    return this.versionProbe;
  }

  private async readVersion(): Promise<Mode> {
    const url = `${this.baseUrl}/openapi.json`;
    let res: Response;
    try {
      res = await this.fetchFn(url, { signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000) });
    } catch (err) {
      throw transportError(err, url);
    }
    const text = await res.text();
    let doc: { info?: { title?: unknown; version?: unknown } } | undefined;
    try {
      doc = JSON.parse(text) as typeof doc;
    } catch {
      doc = undefined;
    }
    const version = typeof doc?.info?.version === 'string' ? doc.info.version : null;
    const title = typeof doc?.info?.title === 'string' ? doc.info.title : '';
    if (!res.ok || !version || !title.startsWith('face-check person API')) {
      throw new ApiVersionError(`${url} answered ${res.status} without a face-check API description: ` +
        `${this.baseUrl} is not a face-check service of API v${API_VERSION}`, version);
    }
    if (version.split('.')[0] !== API_VERSION.split('.')[0]) {
      throw new ApiVersionError(`the service at ${this.baseUrl} speaks API v${version}; this client speaks v${API_VERSION}: ` +
        `use a client of the service's major version`, version);
    }
    return /\(device mode\)/.test(title) ? 'device' : 'cloud';
  }

  private async send(op: OperationName, personId: string | undefined, body: Record<string, unknown> | undefined,
    opts: CallOptions): Promise<Record<string, unknown>> {
    if (this.options.checkVersion !== false) await this.probe();
    const contract = OPERATIONS[op];
    const uri = contract.path.replace('{person_id}', encodeURIComponent(personId ?? ''));
    const text = body === undefined ? '' : JSON.stringify(body);
    const retries = Math.max(0, this.options.retries ?? 2);
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= retries;
      const outcome = await this.attempt(contract.method, uri, text, opts);
      if (outcome.kind === 'network') {
        if (!last && RETRY_NETWORK.has(op)) {
          await sleep(jittered(NETWORK_RETRY_DELAY_MS), opts.signal);
          continue;
        }
        throw outcome.error;
      }
      const { res, answer } = outcome;
      const requestId = res.headers.get('request-id');
      const retryAfter = retryAfterSeconds(res.headers.get('retry-after'));
      const maxDelay = this.options.maxRetryDelayMs ?? 10_000;
      const retryable = res.status === 503 && !last && RETRY_503.has(op) && retryAfter !== null && retryAfter * 1000 <= maxDelay;
      if (this.options.signer) {
        try {
          this.options.signer.verifyResponse(this.signedBaseUrl, uri, answer, res.headers.get('signature'), res.headers.get('timestamp'));
        } catch (err) {
          // An unverified 503 may only cost a retry of an operation that is safe to repeat; nothing else of it is used.
          if (retryable) {
            await sleep(jittered(retryAfter * 1000), opts.signal);
            continue;
          }
          throw new ResponseSignatureError(`the answer to ${contract.method} ${uri} is refused: ${(err as Error).message}`,
            res.status, requestId, errorCode(answer));
        }
      }
      let json: unknown;
      try {
        json = JSON.parse(answer);
      } catch {
        throw new UnexpectedResponseError(`${contract.method} ${uri} answered ${res.status} with a body that is not JSON`, res.status, requestId);
      }
      if (res.status === 200) {
        if (typeof json !== 'object' || json === null || Array.isArray(json)) {
          throw new UnexpectedResponseError(`${contract.method} ${uri} answered 200 without a JSON object`, 200, requestId);
        }
        return json as Record<string, unknown>;
      }
      if (retryable) {
        await sleep(jittered(retryAfter * 1000), opts.signal);
        continue;
      }
      const e = json as { code?: unknown; message?: unknown };
      if (typeof e?.code !== 'string' || typeof e.message !== 'string') {
        throw new UnexpectedResponseError(`${contract.method} ${uri} answered ${res.status} without {code, message}`, res.status, requestId);
      }
      const error = serviceError({ code: e.code, message: e.message, status: res.status, requestId, retryAfterSeconds: retryAfter });
      if (error instanceof OperationNotSupportedError && op === 'liveFace') {
        throw new OperationNotSupportedError({ code: e.code, message: `${e.message}: the live face exists on a device only`, status: res.status, requestId });
      }
      throw error;
    }
  }

  /** One request and its whole answer, under the timeout and the caller's signal. */
  private async attempt(method: string, uri: string, body: string, opts: CallOptions):
    Promise<{ kind: 'answer'; res: Response; answer: string } | { kind: 'network'; error: FaceCheckError }> {
    opts.signal?.throwIfAborted();
    const headers: Record<string, string> = { 'Api-Key': this.options.apiKey, 'Content-Type': 'application/json' };
    if (this.options.signer) {
      const { signature, timestamp } = await this.options.signer.signRequest(this.signedBaseUrl, uri, body);
      headers.Signature = signature;
      headers.Timestamp = timestamp;
    }
    const timeoutMs = opts.timeoutMs ?? this.options.timeoutMs ?? 30_000;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    const url = `${this.baseUrl}${uri}`;
    try {
      const res = await this.fetchFn(url, { method, headers, body: body || undefined, signal });
      return { kind: 'answer', res, answer: await res.text() };
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (timeout.aborted) throw new RequestTimeoutError(`${method} ${url}: no answer within ${timeoutMs} ms`);
      return { kind: 'network', error: transportError(err, url) };
    }
  }
}

function person(body: Record<string, unknown>): Person {
  const { personId, created, updated } = body;
  if (typeof personId !== 'string' || typeof created !== 'string' || typeof updated !== 'string') {
    throw new UnexpectedResponseError('a person answer without personId, created and updated', 200, null);
  }
  return { personId, created, updated };
}

function errorCode(text: string): string | null {
  try {
    const code = (JSON.parse(text) as { code?: unknown }).code;
    return typeof code === 'string' ? code : null;
  } catch {
    return null;
  }
}

function retryAfterSeconds(header: string | null): number | null {
  if (header === null || !/^\d+$/.test(header.trim())) return null;
  return Number(header.trim());
}

/** Between the delay and 1.5 times it, so clients refused together do not come back together. */
function jittered(ms: number): number {
  return ms * (1 + Math.random() / 2);
}

function transportError(err: unknown, url: string): NetworkError {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const why = cause?.code ?? cause?.message ?? (err as Error)?.message ?? String(err);
  return new NetworkError(`${url}: ${why}`, err);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
