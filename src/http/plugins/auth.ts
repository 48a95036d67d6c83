// Api-Key authentication, first thing on every API route (before the body is even parsed), so an
// unauthenticated caller learns nothing about its request.
import { globalPlugin } from './global-plugin';
import type { FastifyPluginAsync } from 'fastify';
import type { Authenticator } from '../../services/auth';
import { headerValue } from '../request-header';

const auth: FastifyPluginAsync<{ authenticator: Authenticator }> = async (app, opts) => {
  app.addHook('onRequest', async (request) => {
    const permission = request.routeOptions.config?.permission;
    if (!permission) return;
    request.principal = await opts.authenticator.authenticate(headerValue(request, 'api-key'), permission);
  });
};

export default globalPlugin(auth, 'auth');
