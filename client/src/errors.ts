// Every answer the client does not turn into a result is one of these. The service's errors carry the spec's
// code, message, HTTP status and Request-Id; one class per error of the interface specification (section 7),
// so `catch (e) { if (e instanceof NoPersonMatchedError) ... }` and `e.code === 'RF_001'` both work.

/** What the service's error body and headers said. */
export interface ServiceErrorInit {
  code: string;
  message: string;
  status: number;
  requestId: string | null;
  /** Seconds from Retry-After (503), when sent. */
  retryAfterSeconds?: number | null;
}

/** Base of every error this client throws. */
export class FaceCheckError extends Error {
  override name = 'FaceCheckError';
}

/** An error answer of the service: `code` and `message` from its body, `status`, `requestId` from its header. */
export class ServiceError extends FaceCheckError {
  override name = 'ServiceError';
  readonly code: string;
  readonly status: number;
  /** The response's Request-Id: the service logs the details of the error under it. Quote it in reports. */
  readonly requestId: string | null;
  /** Retry-After in seconds (503 only), or null. */
  readonly retryAfterSeconds: number | null;

  constructor(init: ServiceErrorInit) {
    super(init.message);
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId;
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
  }
}

// ---- Live face (device only) --------------------------------------------------------------------------------

/** R_400 (400): the camera is not connected (also a device configured without one). Get face image. */
export class CameraNotConnectedError extends ServiceError { override name = 'CameraNotConnectedError'; }
/** R_404 (400): no face in front of the camera passed the liveness check in the last second. Get face image. */
export class NoLiveFaceError extends ServiceError { override name = 'NoLiveFaceError'; }

// ---- Enrolment checks (create, update; F_011 also identify) ------------------------------------------------

/** Any F_ code (400): the photo failed an enrolment check; `code` says which. */
export class FaceCheckFailedError extends ServiceError { override name = 'FaceCheckFailedError'; }
/** F_012: the face is already enrolled (as another person of the account). Create, update. */
export class FaceExistsError extends FaceCheckFailedError { override name = 'FaceExistsError'; }
/** F_011: wrong face size (the face is too small). Create, update, identify. */
export class WrongFaceSizeError extends FaceCheckFailedError { override name = 'WrongFaceSizeError'; }
/** F_010: wrong face yaw (head turned left or right). Create, update. */
export class WrongFaceYawError extends FaceCheckFailedError { override name = 'WrongFaceYawError'; }
/** F_009: wrong face pitch (head tilted up or down). Create, update. */
export class WrongFacePitchError extends FaceCheckFailedError { override name = 'WrongFacePitchError'; }
/** F_008: wrong face roll (head tilted sideways). Create, update. */
export class WrongFaceRollError extends FaceCheckFailedError { override name = 'WrongFaceRollError'; }
/** F_007: sharpness is bad (blurred photo). Create, update. */
export class BadSharpnessError extends FaceCheckFailedError { override name = 'BadSharpnessError'; }
/** F_006: brightness is bad (too dark or too bright). Create, update. */
export class BadBrightnessError extends FaceCheckFailedError { override name = 'BadBrightnessError'; }
/** F_005: sunglasses exist. Create, update. */
export class SunglassesError extends FaceCheckFailedError { override name = 'SunglassesError'; }
/** F_004: mouth is open. Create, update. */
export class MouthOpenError extends FaceCheckFailedError { override name = 'MouthOpenError'; }
/** F_003: eyes are closed. Create, update. */
export class EyesClosedError extends FaceCheckFailedError { override name = 'EyesClosedError'; }
/** F_002: most likely no face exists in the photo. Create, update. */
export class NoFaceError extends FaceCheckFailedError { override name = 'NoFaceError'; }
/** F_001: should be one face (the photo shows several). Create, update. */
export class NotOneFaceError extends FaceCheckFailedError { override name = 'NotOneFaceError'; }

// ---- Requests and persons ----------------------------------------------------------------------------------

/** CP_002 (400): customer profile already exists with this person_id. Create. */
export class PersonExistsError extends ServiceError { override name = 'PersonExistsError'; }
/** R_002 (400, 413): request body exception (not JSON, not an object, or over the service's body limit). */
export class RequestBodyError extends ServiceError { override name = 'RequestBodyError'; }
/** R_003 (400): fields validation exception (bad person_id, image refused, unknown or expired faceKey, threshold outside 0..100). */
export class FieldsValidationError extends ServiceError { override name = 'FieldsValidationError'; }
/** CP_005 (400): number of available requests exceeded (the account's daily quota). Remove, get, identify, verify, compare. */
export class QuotaExceededError extends ServiceError { override name = 'QuotaExceededError'; }
/** NF_001 (404): face not found in collection: no person with this person_id. Update, remove, get, verify. */
export class PersonNotFoundError extends ServiceError { override name = 'PersonNotFoundError'; }
/** RF_001 (410): no person matched. Identify (nobody reached the threshold); verify (the face is not this person's). */
export class NoPersonMatchedError extends ServiceError { override name = 'NoPersonMatchedError'; }

// ---- Generic (any operation) -------------------------------------------------------------------------------

/** 401: unauthorized: the Api-Key is missing or unknown, or (signing keys) the request signature was refused. */
export class UnauthorizedError extends ServiceError { override name = 'UnauthorizedError'; }
/** 403: forbidden: the key is revoked or its role lacks the operation; on a device, the licence does not grant it (the message says which). */
export class ForbiddenError extends ServiceError { override name = 'ForbiddenError'; }
/** 500: internal server error. Quote `requestId` when reporting it. */
export class InternalServerError extends ServiceError { override name = 'InternalServerError'; }
/** 503: service unavailable (overload, shutting down, engine busy); `retryAfterSeconds` says when to try again. */
export class ServiceUnavailableError extends ServiceError { override name = 'ServiceUnavailableError'; }
/** 404 NOT_FOUND / 405: the service has no such operation (e.g. the live face on a cloud service). */
export class OperationNotSupportedError extends ServiceError { override name = 'OperationNotSupportedError'; }

/** The class of each code the service sends (spec section 7 plus the generic codes). */
export const ERROR_CLASSES: Readonly<Record<string, new (init: ServiceErrorInit) => ServiceError>> = {
  R_400: CameraNotConnectedError,
  R_404: NoLiveFaceError,
  F_012: FaceExistsError,
  F_011: WrongFaceSizeError,
  F_010: WrongFaceYawError,
  F_009: WrongFacePitchError,
  F_008: WrongFaceRollError,
  F_007: BadSharpnessError,
  F_006: BadBrightnessError,
  F_005: SunglassesError,
  F_004: MouthOpenError,
  F_003: EyesClosedError,
  F_002: NoFaceError,
  F_001: NotOneFaceError,
  CP_002: PersonExistsError,
  R_002: RequestBodyError,
  R_003: FieldsValidationError,
  CP_005: QuotaExceededError,
  NF_001: PersonNotFoundError,
  RF_001: NoPersonMatchedError,
  UNAUTHORIZED: UnauthorizedError,
  FORBIDDEN: ForbiddenError,
  INTERNAL: InternalServerError,
  SERVICE_UNAVAILABLE: ServiceUnavailableError,
  NOT_FOUND: OperationNotSupportedError,
  METHOD_NOT_ALLOWED: OperationNotSupportedError,
};

const BY_STATUS: Readonly<Record<number, new (init: ServiceErrorInit) => ServiceError>> = {
  401: UnauthorizedError, 403: ForbiddenError, 404: OperationNotSupportedError, 405: OperationNotSupportedError,
  500: InternalServerError, 503: ServiceUnavailableError,
};

/** The typed error for an error answer (by code, else by status, else a plain ServiceError). */
export function serviceError(init: ServiceErrorInit): ServiceError {
  const Class = ERROR_CLASSES[init.code] ?? BY_STATUS[init.status] ?? ServiceError;
  return new Class(init);
}

// ---- Raised by the client itself ---------------------------------------------------------------------------

/**
 * The answer's signature is missing, malformed, stale or does not verify with the service's public key
 * (signing keys only). The answer is refused: its body is not trusted. `status` and `unverifiedCode` say what
 * the unverified answer claimed, for diagnosis only.
 */
export class ResponseSignatureError extends FaceCheckError {
  override name = 'ResponseSignatureError';
  constructor(message: string, readonly status: number, readonly requestId: string | null, readonly unverifiedCode: string | null) {
    super(message);
  }
}

/** The service at baseUrl is not face-check API v6 (another version, another program, or no /openapi.json). */
export class ApiVersionError extends FaceCheckError {
  override name = 'ApiVersionError';
  constructor(message: string, readonly serviceVersion: string | null) {
    super(message);
  }
}

/** No answer within the timeout (per attempt; see the client's `timeoutMs`). */
export class RequestTimeoutError extends FaceCheckError { override name = 'RequestTimeoutError'; }

/** The request did not reach the service or its answer was cut (connection refused or reset, DNS). */
export class NetworkError extends FaceCheckError {
  override name = 'NetworkError';
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
  }
}

/** An answer this API never sends (not JSON, or a 200 body without the fields of the operation). */
export class UnexpectedResponseError extends FaceCheckError {
  override name = 'UnexpectedResponseError';
  constructor(message: string, readonly status: number, readonly requestId: string | null) {
    super(message);
  }
}
