// Device mode's licence gate: every person-API request needs its grant (src/domain/grants.ts) in the
// ruling licence. Registered after the Api-Key hook, so a caller without a key still learns only 401;
// a refused request gets 403 with what is missing (the grant, or why the licence does not rule now).
// Requests the gate let through and the operation answered are counted for the licence's usage report,
// before the answer is sent: the answer waits for the count to be in the device's store.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { grantOf, type Grant, type LicenceLimits } from '../../domain/grants';
import type { ErrorCatalog } from '../../errors';
import { globalPlugin } from './global-plugin';

/** What the gate needs of a licence (src/licensing/device/device-licence.ts). */
export interface LicenceGateSource {
  allows(grant: Grant): { ok: true } | { ok: false; reason: string };
  record(grant: Grant): void | Promise<void>;
  limits(): LicenceLimits | undefined;
}

const licenceGate: FastifyPluginAsync<{ licence: LicenceGateSource; errors: ErrorCatalog }> = async (app, { licence, errors }) => {
  const admitted = new WeakMap<FastifyRequest, Grant>();
  app.addHook('onRequest', async (request) => {
    const url = request.routeOptions.url;
    const grant = url === undefined ? undefined : grantOf(request.method, url);
    if (!grant) return;
    const permit = licence.allows(grant);
    if (!permit.ok) throw errors.explain('Forbidden', permit.reason);
    admitted.set(request, grant);
  });
  // Answered, not failed: a 5xx (overload, internal error) served nothing.
  app.addHook('onSend', async (request, reply, payload) => {
    const grant = admitted.get(request);
    if (grant && reply.statusCode < 500) {
      admitted.delete(request);
      await licence.record(grant);
    }
    return payload;
  });
};

export default globalPlugin(licenceGate, 'licence-gate');
