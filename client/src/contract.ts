// The API this client speaks: the result types and, as data, each operation's method, path, request fields,
// 200 fields and error codes. test/client/client-contract.test.ts checks this table against the /openapi.json the
// service generates from its own route schemas (both modes), so the two cannot drift apart.

/** The API version this client speaks (the service's OpenAPI info.version; the spec's label v6.0.0). */
export const API_VERSION = '6.0.0';

/** An enrolled person (spec 2). The reference image is never returned. */
export interface Person {
  personId: string;
  /** ISO 8601 UTC with milliseconds, e.g. 2024-05-01T10:00:00.000Z. */
  created: string;
  /** Same format as created; changes on update. */
  updated: string;
}

/** The live face in front of the device's camera (spec 4.1, device only). */
export interface LiveFace {
  /** Stands in for the photo in createPerson, updatePerson, identify and verify (valid about 60 s). */
  faceKey: string;
  /** Base64 of the liveness-verified 120x120 image. */
  faceImage: string;
}

/** The outcome of compare(), the same shape in both modes. */
export interface CompareResult {
  /** Whether the faces match at the threshold (the one given, else the spec's default 80 %). */
  matched: boolean;
  /** The similarity percent 0..100 (two decimals) where the service reports it (device); null in cloud mode. */
  similarity: number | null;
}

export type Mode = 'device' | 'cloud';

export interface OperationContract {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** OpenAPI path template. */
  path: string;
  modes: readonly Mode[];
  /** Request body fields: required ones, then optional ones (per mode where they differ). */
  body?: { required: readonly string[]; optional?: readonly string[]; deviceAlternatives?: readonly string[] };
  /** Fields of the 200 body, per mode. */
  ok: Record<Mode, readonly string[] | null>;
  /** Error codes by HTTP status. */
  errors: Readonly<Record<number, readonly string[]>>;
}

const PERSON_FIELDS = ['personId', 'created', 'updated'] as const;
const GENERIC = { 401: ['UNAUTHORIZED'], 403: ['FORBIDDEN'], 500: ['INTERNAL'], 503: ['SERVICE_UNAVAILABLE'] } as const;
const ENROL_400 = ['F_001', 'F_002', 'F_003', 'F_004', 'F_005', 'F_006', 'F_007', 'F_008', 'F_009', 'F_010', 'F_011', 'F_012',
  'CP_002', 'R_002', 'R_003'] as const;
const ID_400 = ['R_002', 'R_003', 'CP_005'] as const;
const person = { device: PERSON_FIELDS, cloud: PERSON_FIELDS };
const faceBody = { required: ['faceImage'], deviceAlternatives: ['faceKey'] } as const;

/** Every operation of the spec (section 4), keyed by the client method that calls it. */
export const OPERATIONS = {
  liveFace: {
    method: 'GET', path: '/person/face/', modes: ['device'],
    ok: { device: ['faceKey', 'faceImage'], cloud: null }, errors: { 400: ['R_400', 'R_404'], ...GENERIC },
  },
  createPerson: {
    method: 'POST', path: '/person/face/{person_id}', modes: ['device', 'cloud'], body: faceBody,
    ok: person, errors: { 400: ENROL_400, 413: ['R_002'], ...GENERIC },
  },
  updatePerson: {
    method: 'PUT', path: '/person/face/{person_id}', modes: ['device', 'cloud'], body: faceBody,
    ok: person, errors: { 400: ENROL_400, 404: ['NF_001'], 413: ['R_002'], ...GENERIC },
  },
  removePerson: {
    method: 'DELETE', path: '/person/face/{person_id}', modes: ['device', 'cloud'],
    ok: person, errors: { 400: ID_400, 404: ['NF_001'], ...GENERIC },
  },
  getPerson: {
    method: 'GET', path: '/person/face/{person_id}', modes: ['device', 'cloud'],
    ok: person, errors: { 400: ID_400, 404: ['NF_001'], ...GENERIC },
  },
  identify: {
    method: 'POST', path: '/person/recognize-face', modes: ['device', 'cloud'], body: faceBody,
    ok: person, errors: { 400: ['R_002', 'R_003', 'F_011', 'CP_005'], 410: ['RF_001'], 413: ['R_002'], ...GENERIC },
  },
  verify: {
    method: 'POST', path: '/person/verify-face/{person_id}', modes: ['device', 'cloud'], body: faceBody,
    ok: person, errors: { 400: ID_400, 404: ['NF_001'], 410: ['RF_001'], 413: ['R_002'], ...GENERIC },
  },
  compare: {
    method: 'POST', path: '/person/compare-face', modes: ['device', 'cloud'],
    body: { required: ['targetImage', 'sourceImage'], optional: ['similarityThreshold'] },
    ok: { device: ['similarity'], cloud: ['facesMatched'] }, errors: { 400: ID_400, 413: ['R_002'], ...GENERIC },
  },
} as const satisfies Record<string, OperationContract>;

export type OperationName = keyof typeof OPERATIONS;

/** The spec's default comparison threshold (percent), used to decide `matched` when the service reports a similarity. */
export const DEFAULT_COMPARE_THRESHOLD = 80;
