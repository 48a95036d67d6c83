// Request bodies are JSON only. A missing body, an unparsable one, a body that is not a JSON object, or a
// body sent with another Content-Type is R_002. Routes without a body (GET, DELETE) accept a request
// with "Content-Type: application/json" and an empty body, since clients send that header everywhere.
// Bodies nested deeper than MAX_JSON_DEPTH or with more than MAX_JSON_VALUES values are R_002 without being
// parsed (json-shape.ts: JSON.parse of such bodies blocks the event loop for seconds).
// Responses: JSON bodies go out as exactly "Content-Type: application/json" (JSON is UTF-8 by definition).
import { globalPlugin } from './global-plugin';
import type { FastifyPluginAsync } from 'fastify';
import type { ErrorCatalog } from '../../errors';
import { jsonShapeProblem } from '../json-shape';

const jsonBody: FastifyPluginAsync<{ errors: ErrorCatalog }> = async (app, { errors }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const textBody = body as string;
    request.rawBody = textBody;
    if (textBody.trim() === '') {
      done(null, undefined);
      return;
    }
    const shape = jsonShapeProblem(textBody);
    if (shape) {
      request.bodyError = errors.create('RequestBody', shape);
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(textBody));
    } catch (err) {
      request.bodyError = errors.create('RequestBody', `unparsable JSON: ${(err as Error).message}`);
      done(null, undefined);
    }
  });

  app.addHook('preValidation', async (request) => {
    if (request.bodyError) throw request.bodyError;
    if (!request.routeOptions.config?.jsonBody) return;
    const b = request.body;
    if (typeof b !== 'object' || b === null || Array.isArray(b)) {
      throw errors.create('RequestBody', b === undefined ? 'no JSON body' : 'the body is not a JSON object');
    }
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('application/json')) reply.header('content-type', 'application/json');
    return payload;
  });
};

export default globalPlugin(jsonBody, 'json-body');
