// The stylesheet and the script, served from the strings compiled into the program. Their addresses carry
// a hash of the content (static/assets.ts), so they are cached for a year and a new version is a new address.
import type { FastifyPluginAsync } from 'fastify';
import { COPY_SCRIPT, STYLESHEET } from '../static/assets';

const YEAR_SECONDS = 365 * 24 * 3600;

const staticRoutes: FastifyPluginAsync = async (app) => {
  for (const asset of [STYLESHEET, COPY_SCRIPT]) {
    app.get(asset.path, { config: { backOffice: 'public' } }, async (_request, reply) =>
      reply.code(200)
        .header('content-type', asset.contentType)
        .header('cache-control', `public, max-age=${YEAR_SECONDS}, immutable`)
        .send(asset.body));
  }
};

export default staticRoutes;
