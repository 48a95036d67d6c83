// Request-Id: every response carries the id fastify generated for the request (a UUID, see app.ts), so a
// client can quote it and the operator can find the request in the log.
import { globalPlugin } from './global-plugin';
import type { FastifyPluginAsync } from 'fastify';

const requestId: FastifyPluginAsync = async (app) => {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('Request-Id', request.id);
  });
};

export default globalPlugin(requestId, 'request-id');
