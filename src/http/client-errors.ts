// Requests node's HTTP parser refuses never reach fastify's routes, hooks or error handler: a bad method,
// a space or control character in the path, Content-Length with Transfer-Encoding, two Content-Lengths,
// folded headers, bad chunks (400), headers over the size limit (431), a request not received within
// [server] request_timeout_ms / headers_timeout_ms (408). The answer is written on the socket here, in the
// API's own shape: {code, message} from the error table (R_002: the request itself is malformed), a fresh
// Request-Id, and the connection closed (the parser's state is unknown after such an error).
import crypto from 'node:crypto';
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { ErrorCatalog } from '../errors';

/** Status for a parser or socket error code; the body is R_002 in every case. */
function statusOf(code: string | undefined): number {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  if (code === 'HPE_HEADER_OVERFLOW') return 431;
  return 400;
}

/** The raw HTTP/1.1 response for an error refused before routing: {code, message} and a Request-Id. */
export function rawErrorResponse(status: number, body: { code: string; message: string }, requestId: string,
  extraHeaders: Record<string, string> = {}): string {
  const text = JSON.stringify(body);
  const headers = {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(text)),
    'Request-Id': requestId,
    ...extraHeaders,
    Connection: 'close',
  };
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\n${lines}\r\n${text}`;
}

/** fastify's clientErrorHandler: answers parser errors and timeouts, then closes the socket. */
export function clientErrorHandler(errors: ErrorCatalog, log: () => FastifyBaseLogger | undefined) {
  const answered = new WeakSet<Socket>();
  return (err: Error & { code?: string }, socket: Socket): void => {
    // A reset connection has nobody to answer; a socket gets one answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    if (answered.has(socket)) {
      socket.destroy();
      return;
    }
    answered.add(socket);
    const status = statusOf(err.code);
    const requestId = crypto.randomUUID();
    log()?.info({ reqId: requestId, status, parserError: err.code }, 'malformed request refused');
    // Once a response has started on this socket (a route is answering), another one cannot be written.
    const started = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (socket.writable && !started) {
      socket.end(rawErrorResponse(status, errors.create('RequestBody').body(), requestId));
      // end() flushes the answer; destroy after a short grace if the client never reads it.
      setTimeout(() => socket.destroy(), 1000).unref();
    } else {
      socket.destroy();
    }
  };
}

/**
 * Two requests node answers (or drops) itself, without fastify: CONNECT (the socket would be closed without
 * a word) and an Expect header other than 100-continue (an empty 417). Both get the API's body here.
 */
export function answerUnroutable(server: Server, errors: ErrorCatalog, log: () => FastifyBaseLogger | undefined): void {
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    const requestId = crypto.randomUUID();
    log()?.info({ reqId: requestId, method: req.method }, 'CONNECT refused');
    const e = errors.create('MethodNotAllowed', 'CONNECT');
    socket.on('error', () => undefined);
    socket.end(rawErrorResponse(e.statusCode, e.body(), requestId));
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const requestId = crypto.randomUUID();
    log()?.info({ reqId: requestId, expect: req.headers.expect }, 'unsupported Expect refused');
    const text = JSON.stringify(errors.create('RequestBody').body());
    res.writeHead(417, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), 'Request-Id': requestId, Connection: 'close' });
    res.end(text);
  });
}
