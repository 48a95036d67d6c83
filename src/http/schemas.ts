// JSON schemas of the routes: request validation (fastify/ajv, no type coercion) and the OpenAPI document
// are both generated from these.
import type { ServiceMode } from '../config/types';
import type { ErrorCode } from '../error-table';

/** person_id: 1-64 characters of A-Z a-z 0-9 _ . -, starting with a letter, digit or underscore. */
export const PERSON_ID_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$';

export const personIdParams = {
  type: 'object',
  required: ['person_id'],
  additionalProperties: false,
  properties: {
    person_id: {
      type: 'string',
      pattern: PERSON_ID_PATTERN,
      description: 'Client-chosen id: 1-64 characters of A-Z a-z 0-9 _ . - (not starting with . or -); case-sensitive.',
    },
  },
} as const;

const base64Image = (description: string) => ({
  type: 'string',
  minLength: 1,
  description: `${description} Standard base64 (RFC 4648, padded, no line breaks) of a JPEG, PNG, WebP, GIF, TIFF, AVIF or BMP file; a data:image/<type>;base64, prefix is accepted.`,
});

export const faceImageBody = {
  type: 'object',
  required: ['faceImage'],
  additionalProperties: false,
  properties: { faceImage: base64Image('The face photo.') },
} as const;

/** Device mode: a photo, or the faceKey of a live capture from GET /person/face/ (exactly one of the two). */
export const faceInputBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    faceImage: base64Image('The face photo.'),
    faceKey: {
      type: 'string', minLength: 1, maxLength: 128,
      description: 'A faceKey from GET /person/face/, valid [liveness] face_key_ttl_s (60 s): the liveness-checked ' +
        'capture itself is used, at full resolution. Unknown or expired: R_003.',
    },
  },
  oneOf: [{ required: ['faceImage'] }, { required: ['faceKey'] }],
} as const;

/** The face body of create, update, identify and verify: faceKey is accepted in device mode only. */
export function faceBodyFor(mode: ServiceMode) {
  return mode === 'device' ? faceInputBody : faceImageBody;
}

export const compareBody = {
  type: 'object',
  required: ['targetImage', 'sourceImage'],
  additionalProperties: false,
  properties: {
    targetImage: base64Image('The photo whose largest face is compared.'),
    sourceImage: base64Image('The photo of the face to compare (its largest face).'),
    similarityThreshold: {
      type: 'number',
      minimum: 0,
      maximum: 100,
      description: 'Similarity percent (0..100) a match needs; default [matching] compare_threshold (80).',
    },
  },
} as const;

export const personResponse = {
  type: 'object',
  required: ['personId', 'created', 'updated'],
  additionalProperties: false,
  properties: {
    personId: { type: 'string' },
    created: { type: 'string', format: 'date-time', description: 'ISO 8601 UTC with milliseconds, e.g. 2024-05-01T12:00:00.000Z' },
    updated: { type: 'string', format: 'date-time' },
  },
} as const;

export const errorResponse = {
  type: 'object',
  required: ['code', 'message'],
  additionalProperties: false,
  properties: { code: { type: 'string' }, message: { type: 'string' } },
} as const;

/** Error responses by status, each described with its possible codes (codes of the error table). */
export function errorResponses(byStatus: Record<number, readonly ErrorCode[]>): Record<number, unknown> {
  const out: Record<number, unknown> = {};
  for (const [status, codes] of Object.entries(byStatus)) {
    out[Number(status)] = { ...errorResponse, description: `Error body; code one of: ${codes.join(', ')}` };
  }
  return out;
}

/** 401/403/500/503 (and 413 for bodies over [server] body_limit_bytes) on every authenticated route; 503
 *  (with Retry-After) under overload or while shutting down (plugins/overload.ts). */
export const commonErrors: Record<number, readonly ErrorCode[]> = {
  401: ['UNAUTHORIZED'],
  403: ['FORBIDDEN'],
  500: ['INTERNAL'],
  503: ['SERVICE_UNAVAILABLE'],
};

export const bodyErrors: Record<number, readonly ErrorCode[]> = { 413: ['R_002'] };

export const apiKeySecurity = [{ ApiKey: [] }];
