// The service log: fastify's pino logger, JSON lines on stdout, at [log] level. Each request's lines carry
// its id as reqId (the Request-Id header the client got back). What must never reach a line - images,
// templates, API keys, signing keys, passwords, session tokens, licence keys - is kept out by what is
// logged at all: a request is logged by method, path and address (no headers, no body, no query string,
// where a client might put anything); the answer by status code. The redaction below is a second line
// should a header or a raw request packet ever be logged.
import type { FastifyRequest, FastifyServerOptions } from 'fastify';
import type { LogLevel } from '../config/types';

/** Headers that carry credentials (requests and answers). */
export const SECRET_HEADERS = ['api-key', 'authorization', 'cookie', 'set-cookie', 'licence-key', 'signature'] as const;

export const REDACTED = '[redacted]';

type LoggerOptions = Exclude<FastifyServerOptions['logger'], boolean | undefined>;

export function logOptions(level: LogLevel): LoggerOptions {
  const headerPaths = SECRET_HEADERS.flatMap((h) => [`req.headers["${h}"]`, `res.headers["${h}"]`, `headers["${h}"]`]);
  return {
    level,
    redact: { paths: [...headerPaths, 'err.rawPacket', 'rawPacket'], censor: REDACTED },
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: request.url.split('?')[0],
        remoteAddress: request.ip,
      }),
    },
  };
}
