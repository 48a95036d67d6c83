// API errors. The one error table lives in native/core/error_table.h and reaches TypeScript through the
// addon's `errorTable` export (src/native.ts loads it); every HTTP error body ({code, message}) and status
// is taken from it. Only types come from the addon here, so a catalog can be built from any rows (tests).
import type { NativeErrorRow } from './native';

/** The rows the service refers to by name (the enum names of error_table.h). */
export const ERROR_NAMES = [
  'CameraNotConnected', 'LiveFaceNotFound', 'FaceExists', 'WrongFaceSize', 'WrongFaceYaw', 'WrongFacePitch',
  'WrongFaceRoll', 'BadSharpness', 'BadBrightness', 'SunglassesExist', 'MouthOpen', 'EyesClosed', 'NoFace',
  'NotOneFace', 'ProfileExists', 'RequestBody', 'FieldsValidation', 'QuotaExceeded', 'FaceNotInCollection',
  'NoPersonMatched', 'Unauthorized', 'Forbidden', 'Internal', 'NotFoundRoute', 'MethodNotAllowed',
  'PayloadTooLarge', 'ServiceUnavailable',
  // The account and licence APIs (cloud) and the device's licence gate.
  'EmailTaken', 'BadCredentials', 'SignInThrottled', 'ActivationCodeRequired', 'ActivationCodeInvalid',
  'LicenceLimitReached', 'LicenceNotFound', 'LicenceKeyUnknown', 'LicenceRevoked', 'LicenceExpired',
  'LicenceBoundElsewhere',
] as const;
export type ErrorName = (typeof ERROR_NAMES)[number];

/** An error that becomes an HTTP response: status and {code, message} from the table. */
export class ApiError extends Error {
  constructor(
    readonly errorName: ErrorName,
    readonly statusCode: number,
    readonly code: string,
    readonly publicMessage: string,
    /** For the log only; never sent to the client. */
    readonly detail?: string,
  ) {
    super(`${code}: ${publicMessage}${detail ? ` (${detail})` : ''}`);
    this.name = 'ApiError';
  }

  /** Sent as Retry-After when set: the refusal is momentary (busy), not a fault of the request. */
  retryAfterSeconds?: number;

  body(): { code: string; message: string } {
    return { code: this.code, message: this.publicMessage };
  }
}

/** Builds ApiErrors from the table's rows. */
export class ErrorCatalog {
  private readonly rows = new Map<string, NativeErrorRow>();

  constructor(rows: readonly NativeErrorRow[]) {
    for (const row of rows) this.rows.set(row.name, row);
    const missing = ERROR_NAMES.filter((n) => !this.rows.has(n));
    if (missing.length) throw new Error(`error table lacks rows: ${missing.join(', ')}`);
  }

  row(name: ErrorName): NativeErrorRow {
    return this.rows.get(name)!;
  }

  /** `params` fill <placeholders> of the message, e.g. {person_id: 'p1'} for CP_002. */
  create(name: ErrorName, detail?: string, params: Record<string, string> = {}): ApiError {
    const row = this.row(name);
    const message = row.message.replace(/<([a-z_]+)>/g, (whole, key: string) => params[key] ?? whole);
    return new ApiError(name, row.http, row.code, message, detail);
  }

  /**
   * An error whose message carries the reason after the table's text ("Forbidden: licence lic_x does not
   * grant identify"). For the account, licence and grant refusals, where the caller must learn what to fix;
   * the person API's messages stay the spec's own texts (create()).
   */
  explain(name: ErrorName, reason: string): ApiError {
    const row = this.row(name);
    return new ApiError(name, row.http, row.code, `${row.message}: ${reason}`);
  }

  /** Every row, for documentation. */
  all(): NativeErrorRow[] {
    return [...this.rows.values()];
  }
}
