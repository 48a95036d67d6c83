// A raw HTTP/1.1 client for hostile requests: request bytes sent over a plain TCP socket exactly as written
// (so malformed HTTP reaches the server as it is), a minimal reader of the first response, and the API's
// error contract as a check. No test framework here: bench/ code uses it too.
import net from 'node:net';

/** One generated request: a label naming its kind (for reports) and the exact bytes sent. */
export interface HostileRequest {
  kind: string;
  bytes: Buffer;
  /** HEAD: the answer has headers but no body. */
  head?: boolean;
  /** Promises more than it sends: answered only when the server's request timeout runs out. */
  slow?: boolean;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string[]>;
  body: Buffer;
}

/** What came back: a response, a close without one, or nothing within the time bound (a hang). */
export type RawOutcome = { kind: 'response'; response: RawResponse } | { kind: 'closed' } | { kind: 'hang' };

/** Parses the first HTTP/1.x response in buf; undefined while it is incomplete. */
export function parseResponse(buf: Buffer, head = false): RawResponse | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
  if (!m) throw new Error(`not an HTTP response: ${JSON.stringify(lines[0].slice(0, 80))}`);
  const headers: Record<string, string[]> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    const name = line.slice(0, i).trim().toLowerCase();
    (headers[name] ??= []).push(line.slice(i + 1).trim());
  }
  const status = Number(m[1]);
  const rest = buf.subarray(end + 4);
  // An interim answer (100 Continue): the real one follows.
  if (status >= 100 && status < 200) return parseResponse(rest, head);
  if (head || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) };
  if (headers['content-length']) {
    const n = Number(headers['content-length'][0]);
    return rest.length >= n ? { status, headers, body: rest.subarray(0, n) } : undefined;
  }
  if (headers['transfer-encoding']?.some((v) => /chunked/i.test(v))) {
    const chunks: Buffer[] = [];
    let at = 0;
    for (;;) {
      const eol = rest.indexOf('\r\n', at);
      if (eol < 0) return undefined;
      const size = parseInt(rest.subarray(at, eol).toString('latin1'), 16);
      if (size === 0) return { status, headers, body: Buffer.concat(chunks) };
      if (rest.length < eol + 2 + size + 2) return undefined;
      chunks.push(rest.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
  }
  return undefined; // body until close: completed by the caller on 'close'
}

/**
 * Writes bytes on a fresh connection and reads the first response. The socket is not half-closed, so a
 * request that promises more body than it sends waits for the server's timeout, as a slow client would.
 */
export function sendRaw(host: string, port: number, request: HostileRequest, timeoutMs: number): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    let data = Buffer.alloc(0);
    let done = false;
    const finish = (outcome: RawOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ kind: 'hang' }), timeoutMs);
    socket.on('connect', () => socket.write(request.bytes));
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      try {
        const response = parseResponse(data, request.head);
        if (response) finish({ kind: 'response', response });
      } catch {
        finish({ kind: 'closed' });
      }
    });
    const onClose = () => {
      if (done) return;
      const end = data.indexOf('\r\n\r\n');
      if (end >= 0) {
        try {
          const response = parseResponse(data, request.head) ?? { ...parseResponse(Buffer.concat([data.subarray(0, end), Buffer.from('\r\nContent-Length: 0\r\n\r\n')]))!, body: data.subarray(end + 4) };
          finish({ kind: 'response', response });
          return;
        } catch { /* fall through */ }
      }
      finish({ kind: 'closed' });
    };
    socket.on('close', onClose);
    socket.on('error', () => undefined); // 'close' follows
  });
}

/** Why a response breaks the API's error contract, or undefined when it keeps it. */
export function contractProblem(request: HostileRequest, r: RawResponse): string | undefined {
  if (r.status >= 500) return `status ${r.status}`;
  if (!r.headers['request-id']?.[0]) return 'no Request-Id header';
  if (r.status < 400 || request.head) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(r.body.toString('utf8'));
  } catch {
    return `error body is not JSON: ${JSON.stringify(r.body.toString('latin1').slice(0, 80))}`;
  }
  const keys = body && typeof body === 'object' ? Object.keys(body).sort().join(',') : '';
  if (keys !== 'code,message') return `error body is not exactly {code, message}: ${JSON.stringify(body).slice(0, 120)}`;
  const { code, message } = body as Record<string, unknown>;
  if (typeof code !== 'string' || typeof message !== 'string' || !code || !message) return 'code/message not non-empty strings';
  return undefined;
}

export interface RequestParts {
  method: string;
  path: string;
  /** Host: undefined = "127.0.0.1", null = none. */
  host?: string | null;
  version?: string;
  headers?: [string, string][];
  body?: Buffer | string;
  /** Content-Length from the body unless false (the headers then say what they say). */
  contentLength?: boolean;
}

export function buildRequest(p: RequestParts): Buffer {
  const body = p.body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(p.body) ? p.body : Buffer.from(p.body, 'utf8');
  const head: string[] = [`${p.method} ${p.path} ${p.version ?? 'HTTP/1.1'}`];
  if (p.host !== null) head.push(`Host: ${p.host ?? '127.0.0.1'}`);
  for (const [k, v] of p.headers ?? []) head.push(`${k}: ${v}`);
  if (p.contentLength !== false && (body.length > 0 || p.method === 'POST' || p.method === 'PUT')) head.push(`Content-Length: ${body.length}`);
  head.push('Connection: close');
  return Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}
