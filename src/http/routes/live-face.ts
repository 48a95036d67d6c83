// GET /person/face/ - the live face (device mode only). In cloud mode the path answers 404 NOT_FOUND,
// like any route the cloud API does not have.
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceMode } from '../../config/types';
import type { ErrorCatalog } from '../../errors';
import { apiKeySecurity, commonErrors, errorResponses } from '../schemas';

const liveFace: FastifyPluginAsync<{ mode: ServiceMode; errors: ErrorCatalog }> = async (app, { mode, errors }) => {
  if (mode === 'cloud') {
    // Registered so the parametric GET /person/face/:person_id does not answer it with R_003.
    app.get('/person/face/', { schema: { hide: true }, config: { unlisted: true } }, async () => {
      throw errors.create('NotFoundRoute', 'GET /person/face/ exists in device mode only');
    });
    return;
  }
  app.get('/person/face/', {
    config: { permission: 'live:read' },
    schema: {
      summary: 'Get face image (device only)',
      description: 'The liveness-verified face in front of the camera now or less than 1 second ago, 120x120 pixels.',
      tags: ['device'],
      security: apiKeySecurity,
      response: {
        200: {
          type: 'object', required: ['faceKey', 'faceImage'], additionalProperties: false,
          properties: {
            faceKey: { type: 'string' },
            faceImage: { type: 'string', description: 'Base64 image, 120x120 pixels.' },
          },
        },
        ...errorResponses({ 400: ['R_400', 'R_404'], ...commonErrors }),
      },
    },
  }, async () => app.services.getLiveFace());
};

export default liveFace;
