// Request bodies are JSON only. A missing body, an unparsable one, a body that is not a JSON object, or a
// body sent with another Content-Type is R_002. Routes without a body (GET, DELETE) accept a request
// with "Content-Type: application/json" and an empty body, since clients send that header everywhere.
// Bodies nested deeper than MAX_JSON_DEPTH or with more than MAX_JSON_VALUES values are R_002 without being
// kept or parsed (json-shape.ts: JSON.parse of such bodies blocks the event loop for seconds).
// Responses: JSON bodies go out as exactly "Content-Type: application/json" (JSON is UTF-8 by definition).
import { globalPlugin } from './global-plugin';
import type { FastifyPluginAsync } from 'fastify';
import type { ErrorCatalog } from '../../errors';
import { JsonShapeScanner } from '../json-shape';

const jsonBody: FastifyPluginAsync<{ errors: ErrorCatalog }> = async (app, { errors }) => {
  app.removeAllContentTypeParsers();
  // The body is read here, not by fastify's string reader, so that its shape is judged chunk by chunk: once a
  // body is refused, the rest of it is read off the socket and dropped, never kept, decoded or parsed.
  app.addContentTypeParser('application/json', (request, payload, done) => {
    const limit = request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? Infinity;
    const tooLarge = () => Object.assign(new Error(`request body over ${limit} bytes`), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 });
    if (Number(request.headers['content-length']) > limit) {
      request.closeAfterReply = true;
      done(tooLarge(), undefined);
      return;
    }
    // A key that signs its requests needs the body itself to check the signature, even a refused one.
    const keepAll = Boolean(request.principal?.signingPublicKey);
    const scanner = new JsonShapeScanner(undefined, request.routeOptions.config?.maxJsonValues);
    const chunks: Buffer[] = [];
    let size = 0;
    let problem: string | undefined;
    let settled = false;
    const settle = (err: Error | null, body?: unknown) => {
      if (settled) return;
      settled = true;
      done(err, body);
    };
    payload.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) {
        request.closeAfterReply = true;
        settle(tooLarge());
        return;
      }
      problem ??= scanner.push(chunk);
      if (problem && !keepAll) {
        // Answered now; the rest of the body (at most body_limit_bytes) is read off the socket and dropped,
        // never kept or decoded. Reading it on, rather than closing at once, keeps the answer from being
        // lost to a connection reset while the client is still sending. A signing key's request is read
        // whole: its signature is judged first.
        settle(errors.create('RequestBody', problem));
        return;
      }
      chunks.push(chunk);
    });
    payload.on('error', (err) => settle(err));
    payload.on('end', () => {
      const textBody = Buffer.concat(chunks).toString('utf8');
      request.rawBody = textBody;
      if (problem) {
        request.bodyError = errors.create('RequestBody', problem);
        settle(null, undefined);
        return;
      }
      if (textBody.trim() === '') {
        settle(null, undefined);
        return;
      }
      try {
        settle(null, JSON.parse(textBody));
      } catch (err) {
        request.bodyError = errors.create('RequestBody', `unparsable JSON: ${(err as Error).message}`);
        settle(null, undefined);
      }
    });
  });

  app.addHook('preValidation', async (request) => {
    if (request.bodyError) throw request.bodyError;
    // DELETE takes no body: one sent is a client's mistake, not ignored (node never reads a GET's body).
    if (request.method === 'DELETE' && request.body !== undefined) {
      throw errors.create('RequestBody', `${request.method} takes no body`);
    }
    if (!request.routeOptions.config?.jsonBody) return;
    const b = request.body;
    if (typeof b !== 'object' || b === null || Array.isArray(b)) {
      throw errors.create('RequestBody', b === undefined ? 'no JSON body' : 'the body is not a JSON object');
    }
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (request.closeAfterReply) reply.header('connection', 'close');
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('application/json')) reply.header('content-type', 'application/json');
    return payload;
  });
};

export default globalPlugin(jsonBody, 'json-body');
