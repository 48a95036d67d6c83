// POST /person/recognize-face: 1:N identification.
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceMode } from '../../config/types';
import { callerOf } from './person-face';
import type { FaceInput } from '../../services';
import { apiKeySecurity, bodyErrors, commonErrors, errorResponses, faceBodyFor, personResponse } from '../schemas';

const recognizeFace: FastifyPluginAsync<{ mode: ServiceMode }> = async (app, { mode }) => {
  app.post<{ Body: FaceInput }>('/person/recognize-face', {
    config: { permission: 'person:match', jsonBody: true, engine: true },
    schema: {
      summary: 'Identify person',
      description: 'Returns the best-matching enrolled person of the account when its similarity reaches [matching] ' +
        'identify_threshold (98%). 410 RF_001 when nobody matches or the photo has no face.',
      tags: ['matching'],
      security: apiKeySecurity,
      body: faceBodyFor(mode),
      response: {
        200: personResponse,
        ...errorResponses({ 400: ['R_002', 'R_003', 'F_011', 'CP_005'], 410: ['RF_001'], ...bodyErrors, ...commonErrors }),
      },
    },
  }, async (request) => app.services.identifyPerson(callerOf(request), request.body));
};

export default recognizeFace;
