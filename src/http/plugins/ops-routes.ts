// The operator's probes and metrics: GET /health/live, GET /health/ready and GET /metrics
// (docs/operations.md), plus the hook that counts every answered request for the metrics.
// The probes need no key and tell no data. /health/live is answered in this plugin's onRequest hook, so it
// must be registered before the load shedding (overload.ts): a live probe answers whatever the load, and a
// process that answers is alive. /health/ready and /metrics go through the shedding like any route: an
// overloaded instance is not ready for more traffic (its 503 says why).
// [metrics] access: loopback (default) answers /metrics only to 127.0.0.1/::1 and 404 to others, as if
// absent; key needs an API key of role full (in cloud mode of account "default": the metrics list every
// account); off registers no route at all.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { MetricsConfig, ServiceMode } from '../../config/types';
import type { ErrorCatalog } from '../../errors';
import type { Readiness } from '../../ops/health';
import type { ServiceMetrics } from '../../ops/metrics';
import { DEFAULT_ACCOUNT } from '../../services/auth';
import { sendApiError } from './error-handler';
import { globalPlugin } from './global-plugin';

export const LIVE_URL = '/health/live';
export const READY_URL = '/health/ready';
export const METRICS_URL = '/metrics';

export type OpsRoutesOptions = {
  metrics: ServiceMetrics;
  readiness: () => Promise<Readiness>;
  access: MetricsConfig['access'];
  mode: ServiceMode;
  errors: ErrorCatalog;
};

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/** Nothing but the answer: a live probe must not depend on the store, the engine or the licence. */
function answerLive(reply: FastifyReply): FastifyReply {
  return reply.code(200).header('cache-control', 'no-store').send({ status: 'live' });
}

const opsRoutes: FastifyPluginAsync<OpsRoutesOptions> = async (app, opts) => {
  const { metrics, errors } = opts;

  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.url === LIVE_URL && request.method === 'GET') return answerLive(reply);
  });
  app.addHook('onResponse', async (request, reply) => {
    metrics.observeRequest(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
  });
  app.addHook('onClose', async () => metrics.close());

  // Probes and scrapes come every few seconds: their requests are not logged at info (a failure still is).
  const probe = { schema: { hide: true }, logLevel: 'warn' as const };
  app.get(LIVE_URL, probe, async (request, reply) => answerLive(reply));
  app.get(READY_URL, probe, async (request, reply) => {
    const { ready, checks } = await opts.readiness();
    const reasons = Object.values(checks).filter((c) => c !== 'ok' && c !== 'not used');
    reply.header('cache-control', 'no-store');
    if (ready) return reply.code(200).send({ status: 'ready', checks });
    return reply.code(503).send({ status: 'not ready', reasons, checks });
  });

  if (opts.access === 'off') return;
  const notFound = (request: FastifyRequest, reply: FastifyReply) =>
    sendApiError(request, reply, errors.create('NotFoundRoute', `${request.method} ${request.url.split('?')[0]}`));
  app.get(METRICS_URL, {
    schema: { hide: true },
    logLevel: 'warn',
    // loopback: a stand-in for other clients, so no method or address learns that the route exists.
    config: opts.access === 'key' ? { permission: 'person:read' } : { unlisted: true },
  }, async (request, reply) => {
    if (opts.access === 'loopback' && !LOOPBACK.has(request.socket.remoteAddress ?? '')) return notFound(request, reply);
    if (opts.access === 'key') {
      const principal = request.principal!;
      if (principal.role !== 'full') throw errors.explain('Forbidden', 'the metrics need an API key of role full');
      if (opts.mode === 'cloud' && principal.accountId !== DEFAULT_ACCOUNT) {
        throw errors.explain('Forbidden', `the metrics cover every account: they need a key of account ${DEFAULT_ACCOUNT}`);
      }
    }
    const { text, contentType } = await metrics.exposition();
    return reply.code(200).header('content-type', contentType).header('cache-control', 'no-store').send(text);
  });
};

export default globalPlugin(opsRoutes, 'ops-routes');
