// Person management: POST (create), PUT (update), DELETE (remove), GET (look up) /person/face/{person_id}.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ServiceMode } from '../../config/types';
import type { Caller, FaceInput } from '../../services';
import type { ErrorCode } from '../../error-table';
import {
  apiKeySecurity, bodyErrors, commonErrors, errorResponses, faceBodyFor, personIdParams, personResponse,
} from '../schemas';

type WithId = { Params: { person_id: string } };
type WithImage = WithId & { Body: FaceInput };

export function callerOf(request: FastifyRequest): Caller {
  // The auth hook has run for every route with a permission; no principal here is a wiring bug.
  if (!request.principal) throw new Error('route reached without authentication');
  return { accountId: request.principal.accountId };
}

const ENROL_CODES: ErrorCode[] = [
  'F_001', 'F_002', 'F_003', 'F_004', 'F_005', 'F_006', 'F_007', 'F_008', 'F_009', 'F_010', 'F_011', 'F_012',
  'CP_002', 'R_002', 'R_003',
];

const ID_CODES: ErrorCode[] = ['R_002', 'R_003', 'CP_005'];

/**
 * The options every /person/face/{person_id} route shares; create and update also take the faceImage body
 * and answer the enrolment codes.
 */
function personRoute(permission: 'person:read' | 'person:write', summary: string, description: string,
  opts: { enrol?: boolean; notFound?: boolean; mode?: ServiceMode }) {
  const errors: Record<number, readonly ErrorCode[]> = opts.enrol
    ? { 400: ENROL_CODES, ...bodyErrors, ...commonErrors }
    : { 400: ID_CODES, ...commonErrors };
  if (opts.notFound) errors[404] = ['NF_001'];
  return {
    config: opts.enrol ? { permission, jsonBody: true, engine: true } : { permission },
    schema: {
      summary,
      description,
      tags: ['person'],
      security: apiKeySecurity,
      params: personIdParams,
      ...(opts.enrol ? { body: faceBodyFor(opts.mode ?? 'cloud') } : {}),
      response: { 200: personResponse, ...errorResponses(errors) },
    },
  };
}

const personFace: FastifyPluginAsync<{ mode: ServiceMode }> = async (app, { mode }) => {
  const url = '/person/face/:person_id';

  app.post<WithImage>(url, personRoute('person:write', 'Create person',
    'Enrols a new person. CP_002 when person_id exists; F_ codes when the photo fails an enrolment check.', { enrol: true, mode }),
  async (request) => app.services.createPerson(callerOf(request), request.params.person_id, request.body));

  app.put<WithImage>(url, personRoute('person:write', 'Update person',
    'Replaces the reference face of an enrolled person; created stays, updated changes.', { enrol: true, notFound: true, mode }),
  async (request) => app.services.updatePerson(callerOf(request), request.params.person_id, request.body));

  app.delete<WithId>(url, personRoute('person:write', 'Remove person',
    'Deletes the person, its template and reference image. 200 body: the removed person.', { notFound: true }),
  async (request) => app.services.removePerson(callerOf(request), request.params.person_id));

  app.get<WithId>(url, personRoute('person:read', 'Get person by id [beta]',
    'Checks whether person_id is enrolled.', { notFound: true }),
  async (request) => app.services.getPerson(callerOf(request), request.params.person_id));
};

export default personFace;
