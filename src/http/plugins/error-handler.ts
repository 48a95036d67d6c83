// Turns every failure into the spec's error body {code, message} with the status from the error table.
// Framework errors are mapped: body problems -> R_002, URL/field problems -> R_003, body over the limit ->
// 413 R_002. Errors of the native addon carry their status's name (`status`), a row of the error table,
// and take that row's code and status (e.g. 503 SERVICE_UNAVAILABLE from a closed or busy engine).
// Anything unexpected is a 500 INTERNAL whose body never carries a stack or internal message; the detail
// goes to the log under the Request-Id.
import { globalPlugin } from './global-plugin';
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, isErrorName, type ErrorCatalog, type ErrorName } from '../../errors';
import { DatabaseUnavailableError } from '../../storage/errors';

/** A client told the database is unavailable tries again this much later (the pool reconnects by itself). */
const DATABASE_RETRY_AFTER_SECONDS = 1;

/** A native error's row name (js_errors.h sets `status` to the native status's name, a row of the table). */
function nativeRow(err: unknown): ErrorName | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return isErrorName(status) ? status : undefined;
}

export function toApiError(errors: ErrorCatalog, err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof DatabaseUnavailableError) {
    // The reason only (unreachable, timeout, ...): the message names no host, and nothing was acknowledged.
    const apiError = errors.create('ServiceUnavailable', `database ${err.reason}`);
    apiError.retryAfterSeconds = DATABASE_RETRY_AFTER_SECONDS;
    return apiError;
  }
  const row = nativeRow(err);
  if (row) return errors.create(row, (err as Error).message);
  const e = err as Partial<FastifyError> & { validationContext?: string };
  const message = e.message ?? String(err);
  if (e.validation) return errors.create('FieldsValidation', `${e.validationContext ?? 'request'}: ${message}`);
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.create('PayloadTooLarge', message);
    case 'FST_ERR_BAD_URL':
      return errors.create('FieldsValidation', message);
  }
  if (e.code?.startsWith('FST_ERR_CTP_')) return errors.create('RequestBody', message);
  // The client closed the connection while sending its body: its own doing, logged as a refusal (info), not
  // as a failure of the service (an attacker could otherwise fill the error log).
  if (e.code === 'ECONNRESET' && message === 'aborted') return errors.create('RequestBody', 'the client closed the connection before its body was received');
  const status = e.statusCode ?? 500;
  if (status >= 400 && status < 500) return errors.create('RequestBody', `${e.code ?? 'client error'}: ${message}`);
  return errors.create('Internal', message);
}

export function sendApiError(request: FastifyRequest, reply: FastifyReply, apiError: ApiError, cause?: unknown): FastifyReply {
  if (apiError.statusCode >= 500) request.log.error({ err: cause ?? apiError }, apiError.detail ?? apiError.message);
  else request.log.info({ code: apiError.code, detail: apiError.detail }, 'request refused');
  // Sent pre-serialised: the body is exactly {code, message} whatever the route's schema, and the
  // Content-Type stays "application/json" even on paths where the onSend hooks do not run.
  if (apiError.retryAfterSeconds !== undefined) reply.header('Retry-After', String(apiError.retryAfterSeconds));
  return reply.code(apiError.statusCode).header('content-type', 'application/json').send(Buffer.from(JSON.stringify(apiError.body())));
}

interface KnownRoute {
  pattern: RegExp;
  methods: Set<string>;
}

const errorHandler: FastifyPluginAsync<{ errors: ErrorCatalog }> = async (app, { errors }) => {
  const known: KnownRoute[] = [];
  app.addHook('onRoute', (route) => {
    if ((route.config as { unlisted?: boolean } | undefined)?.unlisted) return;
    const source = route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]*');
    const pattern = new RegExp(`^${source}$`);
    let entry = known.find((k) => k.pattern.source === pattern.source);
    if (!entry) known.push((entry = { pattern, methods: new Set() }));
    for (const m of [route.method].flat()) entry.methods.add(m);
  });

  app.setErrorHandler((err, request, reply) => sendApiError(request, reply, toApiError(errors, err), err));

  // Unknown path: 404 NOT_FOUND. Known path, other method: 405 METHOD_NOT_ALLOWED with an Allow header.
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const allowed = new Set<string>();
    for (const k of known) if (k.pattern.test(path)) k.methods.forEach((m) => allowed.add(m));
    if (allowed.size > 0) {
      reply.header('Allow', [...allowed].sort().join(', '));
      return sendApiError(request, reply, errors.create('MethodNotAllowed', `${request.method} ${path}`));
    }
    return sendApiError(request, reply, errors.create('NotFoundRoute', `${request.method} ${path}`));
  });
};

export default globalPlugin(errorHandler, 'error-handler');
