// The one table of the service's errors (interface spec section 7, plus the generic 401/403/500 and the
// account and licence errors): one row per name, each with its code, HTTP status and public message. Every
// HTTP error body ({code, message}) and status is taken from here; the native addon's statuses are names
// of rows of this table (a test holds it), so a new error never needs a native rebuild.

export interface ErrorRow {
  /** The error's code in the body. */
  readonly code: string;
  /** The HTTP status it is answered with. */
  readonly http: number;
  /** The public message; <placeholders> are filled by ErrorCatalog.create. */
  readonly message: string;
}

export const ERROR_TABLE = {
  CameraNotConnected: { code: 'R_400', http: 400, message: 'Camera is not connected' },
  LiveFaceNotFound: { code: 'R_404', http: 400, message: 'Face not found, or did not pass the liveness check' },
  FaceExists: { code: 'F_012', http: 400, message: 'Face exists' },
  WrongFaceSize: { code: 'F_011', http: 400, message: 'Wrong face size when image check' },
  WrongFaceYaw: { code: 'F_010', http: 400, message: 'Wrong face yaw' },
  WrongFacePitch: { code: 'F_009', http: 400, message: 'Wrong face pitch' },
  WrongFaceRoll: { code: 'F_008', http: 400, message: 'Wrong face roll' },
  BadSharpness: { code: 'F_007', http: 400, message: 'Sharpness is bad' },
  BadBrightness: { code: 'F_006', http: 400, message: 'Brightness is bad' },
  SunglassesExist: { code: 'F_005', http: 400, message: 'Sunglasses exist' },
  MouthOpen: { code: 'F_004', http: 400, message: 'Mouth is open' },
  EyesClosed: { code: 'F_003', http: 400, message: 'Eyes are closed' },
  NoFace: { code: 'F_002', http: 400, message: 'Most likely no face exists' },
  NotOneFace: { code: 'F_001', http: 400, message: 'Should be one face' },
  ProfileExists: { code: 'CP_002', http: 400, message: 'Customer profile already exists with id <person_id>' },
  RequestBody: { code: 'R_002', http: 400, message: 'Request body exception' },
  FieldsValidation: { code: 'R_003', http: 400, message: 'Fields validation exception' },
  QuotaExceeded: { code: 'CP_005', http: 400, message: 'Number of available requests exceeded' },
  FaceNotInCollection: { code: 'NF_001', http: 404, message: 'Face not found in collection' },
  NoPersonMatched: { code: 'RF_001', http: 410, message: 'No person matched' },
  Unauthorized: { code: 'UNAUTHORIZED', http: 401, message: 'Unauthorized' },
  Forbidden: { code: 'FORBIDDEN', http: 403, message: 'Forbidden' },
  Internal: { code: 'INTERNAL', http: 500, message: 'Internal Server Error' },
  NotFoundRoute: { code: 'NOT_FOUND', http: 404, message: 'Route not found' },
  MethodNotAllowed: { code: 'METHOD_NOT_ALLOWED', http: 405, message: 'Method not allowed' },
  PayloadTooLarge: { code: 'R_002', http: 413, message: 'Request body exception' },
  ServiceUnavailable: { code: 'SERVICE_UNAVAILABLE', http: 503, message: 'Service unavailable' },
  // The account and licence APIs (cloud) and the device's licence gate.
  EmailTaken: { code: 'AC_001', http: 400, message: 'An account already exists with this e-mail address' },
  BadCredentials: { code: 'AC_002', http: 401, message: 'Wrong e-mail address or password' },
  SignInThrottled: { code: 'AC_003', http: 429, message: 'Too many failed sign-in attempts' },
  ActivationCodeRequired: { code: 'LC_001', http: 400, message: 'An activation code is required' },
  ActivationCodeInvalid: { code: 'LC_002', http: 400, message: 'Activation code refused' },
  LicenceLimitReached: { code: 'LC_003', http: 400, message: "The plan's licence limit is reached" },
  LicenceNotFound: { code: 'LC_004', http: 404, message: 'Licence not found' },
  LicenceKeyUnknown: { code: 'LC_005', http: 401, message: 'Unknown licence key' },
  LicenceRevoked: { code: 'LC_006', http: 403, message: 'Licence revoked' },
  LicenceExpired: { code: 'LC_007', http: 403, message: 'Licence expired' },
  LicenceBoundElsewhere: { code: 'LC_008', http: 403, message: 'Licence bound to another device' },
} as const satisfies Record<string, ErrorRow>;

export type ErrorName = keyof typeof ERROR_TABLE;
/** Every code of the table (what the OpenAPI document may list). */
export type ErrorCode = (typeof ERROR_TABLE)[ErrorName]['code'];

/** The rows' names, in the table's order. */
export const ERROR_NAMES = Object.keys(ERROR_TABLE) as ErrorName[];

export function isErrorName(name: unknown): name is ErrorName {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(ERROR_TABLE, name);
}
