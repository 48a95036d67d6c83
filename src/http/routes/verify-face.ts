// POST /person/verify-face/{person_id}: 1:1 verification.
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceMode } from '../../config/types';
import type { FaceInput } from '../../services';
import { callerOf } from './person-face';
import {
  apiKeySecurity, bodyErrors, commonErrors, errorResponses, faceBodyFor, personIdParams, personResponse,
} from '../schemas';

const verifyFace: FastifyPluginAsync<{ mode: ServiceMode }> = async (app, { mode }) => {
  app.post<{ Params: { person_id: string }; Body: FaceInput }>('/person/verify-face/:person_id', {
    config: { permission: 'person:match', jsonBody: true, engine: true },
    schema: {
      summary: 'Verify person [beta]',
      description: 'Matches the photo against the enrolled person. 200 when the similarity reaches [matching] ' +
        'verify_threshold (80%); a failed match (or no face) is 410 RF_001.',
      tags: ['matching'],
      security: apiKeySecurity,
      params: personIdParams,
      body: faceBodyFor(mode),
      response: {
        200: personResponse,
        ...errorResponses({
          400: ['R_002', 'R_003', 'CP_005'], 404: ['NF_001'], 410: ['RF_001'],
          ...bodyErrors, ...commonErrors,
        }),
      },
    },
  }, async (request) => app.services.verifyPerson(callerOf(request), request.params.person_id, request.body));
};

export default verifyFace;
