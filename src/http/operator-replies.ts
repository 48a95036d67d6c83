// What the account and licence routes share: the signed-in operator, answers kept out of caches, and field
// refusals that say which field is wrong and why (the person API's R_003 stays the spec's bare text).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Operator } from '../domain/accounts';
import type { ErrorCatalog } from '../errors';

export const OPERATOR_AUTH = 'Needs Authorization: Bearer <session token> from POST /account/v1/sessions.';

export function operatorOf(request: FastifyRequest): Operator {
  // The operator-session hook has run for every route with config.operator; none here is a wiring bug.
  if (!request.operator) throw new Error(`${request.routeOptions.url} reached without a signed-in operator`);
  return request.operator;
}

/** Answers that carry a secret (an API key, a session token, a private key, a licence key) are cached nowhere. */
export function noStore(reply: FastifyReply): void {
  reply.header('cache-control', 'no-store');
}

/** Schema refusals of the routes registered in `app`'s scope: R_003 explained with the field and the rule. */
export function explainFieldErrors(app: FastifyInstance, errors: ErrorCatalog): void {
  app.setSchemaErrorFormatter((problems, dataVar) => {
    const first = problems[0];
    const where = `${dataVar}${first?.instancePath ?? ''}`;
    const extra = first?.keyword === 'additionalProperties'
      ? ` (${String((first.params as { additionalProperty?: string }).additionalProperty)})` : '';
    return errors.explain('FieldsValidation', `${where} ${first?.message ?? 'is not valid'}${extra}`);
  });
}
