// Person management: POST (create), PUT (update), DELETE (remove), GET (look up) /person/face/{person_id}.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Caller } from '../../services';
import {
  apiKeySecurity, bodyErrors, commonErrors, errorResponses, faceImageBody, personIdParams, personResponse,
} from '../schemas';

type WithId = { Params: { person_id: string } };
type WithImage = WithId & { Body: { faceImage: string } };

export function callerOf(request: FastifyRequest): Caller {
  // The auth hook has run for every route with a permission; no principal here is a wiring bug.
  if (!request.principal) throw new Error('route reached without authentication');
  return { accountId: request.principal.accountId };
}

const ENROL_CODES = [
  'F_001', 'F_002', 'F_003', 'F_004', 'F_005', 'F_006', 'F_007', 'F_008', 'F_009', 'F_010', 'F_011', 'F_012',
  'CP_002', 'R_002', 'R_003',
];

/** Route options of create and update: the same body, permission and enrolment codes. */
function enrolRoute(summary: string, description: string, notFound: boolean) {
  return {
    config: { permission: 'person:write' as const, jsonBody: true },
    schema: {
      summary,
      description,
      tags: ['person'],
      security: apiKeySecurity,
      params: personIdParams,
      body: faceImageBody,
      response: {
        200: personResponse,
        ...errorResponses({ 400: ENROL_CODES, ...(notFound ? { 404: ['NF_001'] } : {}), ...bodyErrors, ...commonErrors } as Record<number, string[]>),
      },
    },
  };
}

const personFace: FastifyPluginAsync = async (app) => {
  const url = '/person/face/:person_id';

  app.post<WithImage>(url, enrolRoute('Create person',
    'Enrols a new person. CP_002 when person_id exists; F_ codes when the photo fails an enrolment check.', false),
  async (request) => app.services.createPerson(callerOf(request), request.params.person_id, request.body.faceImage));

  app.put<WithImage>(url, enrolRoute('Update person',
    'Replaces the reference face of an enrolled person; created stays, updated changes.', true),
  async (request) => app.services.updatePerson(callerOf(request), request.params.person_id, request.body.faceImage));

  app.delete<WithId>(url, {
    config: { permission: 'person:write' },
    schema: {
      summary: 'Remove person',
      description: 'Deletes the person, its template and reference image. 200 body: the removed person.',
      tags: ['person'],
      security: apiKeySecurity,
      params: personIdParams,
      response: {
        200: personResponse,
        ...errorResponses({ 400: ['R_002', 'R_003', 'CP_005'], 404: ['NF_001'], ...commonErrors }),
      },
    },
  }, async (request) => app.services.removePerson(callerOf(request), request.params.person_id));

  app.get<WithId>(url, {
    config: { permission: 'person:read' },
    schema: {
      summary: 'Get person by id [beta]',
      description: 'Checks whether person_id is enrolled.',
      tags: ['person'],
      security: apiKeySecurity,
      params: personIdParams,
      response: {
        200: personResponse,
        ...errorResponses({ 400: ['R_002', 'R_003', 'CP_005'], 404: ['NF_001'], ...commonErrors }),
      },
    },
  }, async (request) => app.services.getPerson(callerOf(request), request.params.person_id));
};

export default personFace;
