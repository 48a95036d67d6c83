// An HTTP/1.1 request must carry Host (RFC 9112 3.2). Node's own check answers an empty 400 without the
// API's body or Request-Id, so the server is created with requireHostHeader off and the check is here: R_002.
import { globalPlugin } from './global-plugin';
import type { FastifyPluginAsync } from 'fastify';
import type { ErrorCatalog } from '../../errors';

const hostHeader: FastifyPluginAsync<{ errors: ErrorCatalog }> = async (app, { errors }) => {
  app.addHook('onRequest', async (request) => {
    const raw = request.raw;
    if (raw.httpVersionMajor === 1 && raw.httpVersionMinor >= 1 && !raw.headers.host) {
      throw errors.create('RequestBody', 'HTTP/1.1 request without Host');
    }
  });
};

export default globalPlugin(hostHeader, 'host-header');
