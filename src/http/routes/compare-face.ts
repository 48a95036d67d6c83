// POST /person/compare-face: the source face against the largest face of the target image.
// Cloud answers {facesMatched}, device answers {similarity} (interface spec 4.8).
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceMode } from '../../config/types';
import { callerOf } from './person-face';
import { apiKeySecurity, bodyErrors, commonErrors, compareBody, errorResponses } from '../schemas';

type CompareBody = { targetImage: string; sourceImage: string; similarityThreshold?: number };

const compareFace: FastifyPluginAsync<{ mode: ServiceMode }> = async (app, { mode }) => {
  const ok = mode === 'cloud'
    ? {
        type: 'object', required: ['facesMatched'], additionalProperties: false,
        properties: {
          facesMatched: {
            type: 'integer', minimum: 0, maximum: 1,
            description: '1 when the largest target face reaches the threshold, else 0 (also when a photo has no face).',
          },
        },
      }
    : {
        type: 'object', required: ['similarity'], additionalProperties: false,
        properties: {
          similarity: {
            type: 'number', minimum: 0, maximum: 100,
            description: 'Similarity percent (two decimals) of the two faces; 0 when a photo has no face.',
          },
        },
      };
  app.post<{ Body: CompareBody }>('/person/compare-face', {
    config: { permission: 'person:match', jsonBody: true, engine: true },
    schema: {
      summary: 'Compare person [beta]',
      description: 'Compares the largest face of sourceImage with the largest face of targetImage.',
      tags: ['matching'],
      security: apiKeySecurity,
      body: compareBody,
      response: { 200: ok, ...errorResponses({ 400: ['R_002', 'R_003', 'CP_005'], ...bodyErrors, ...commonErrors }) },
    },
  }, async (request) => {
    const result = await app.services.comparePersons(callerOf(request), request.body);
    return mode === 'cloud' ? { facesMatched: result.facesMatched } : { similarity: result.similarity };
  });
};

export default compareFace;
