// Operator authentication for the account API: routes with `config.operator` need
// "Authorization: Bearer <session token>" of a live session (401 otherwise); 'administrator' routes also
// need that role (403). Runs on onRequest, before the body is read, like the Api-Key check.
import { globalPlugin } from './global-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ErrorCatalog } from '../../errors';
import type { AccountService } from '../../accounts/accounts';
import { headerValue } from '../request-header';

/** The session token of the Authorization header, or undefined when there is none in Bearer form. */
export function bearerToken(request: FastifyRequest): string | undefined {
  const value = headerValue(request, 'authorization');
  const match = value === undefined ? null : /^Bearer +(\S+) *$/i.exec(value);
  return match?.[1];
}

const operatorSession: FastifyPluginAsync<{ accounts: AccountService; errors: ErrorCatalog }> = async (app, opts) => {
  app.addHook('onRequest', async (request) => {
    const needs = request.routeOptions.config?.operator;
    if (!needs) return;
    const operator = await opts.accounts.operatorOf(bearerToken(request));
    if (needs === 'administrator' && operator.role !== 'administrator') {
      throw opts.errors.explain('Forbidden', 'this needs an administrator account');
    }
    request.operator = operator;
  });
};

export default globalPlugin(operatorSession, 'operator-session');
