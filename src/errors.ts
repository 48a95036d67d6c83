// API errors. The one error table lives in native/core/error_table.h and reaches TypeScript through the
// addon's `errorTable` export; every HTTP error body ({code, message}) and status is taken from it.
import { packageRoot } from './package-root';

/** One row of the native error table. */
export interface ErrorRow {
  status: number;
  name: string;
  code: string;
  http: number;
  message: string;
}

/** The rows the service refers to by name (the enum names of error_table.h). */
export const ERROR_NAMES = [
  'CameraNotConnected', 'LiveFaceNotFound', 'FaceExists', 'WrongFaceSize', 'WrongFaceYaw', 'WrongFacePitch',
  'WrongFaceRoll', 'BadSharpness', 'BadBrightness', 'SunglassesExist', 'MouthOpen', 'EyesClosed', 'NoFace',
  'NotOneFace', 'ProfileExists', 'RequestBody', 'FieldsValidation', 'QuotaExceeded', 'FaceNotInCollection',
  'NoPersonMatched', 'Unauthorized', 'Forbidden', 'Internal', 'NotFoundRoute', 'MethodNotAllowed',
  'PayloadTooLarge', 'ServiceUnavailable',
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
  private readonly rows = new Map<string, ErrorRow>();

  constructor(rows: readonly ErrorRow[]) {
    for (const row of rows) this.rows.set(row.name, row);
    const missing = ERROR_NAMES.filter((n) => !this.rows.has(n));
    if (missing.length) throw new Error(`error table lacks rows: ${missing.join(', ')}`);
  }

  row(name: ErrorName): ErrorRow {
    return this.rows.get(name)!;
  }

  /** `params` fill <placeholders> of the message, e.g. {person_id: 'p1'} for CP_002. */
  create(name: ErrorName, detail?: string, params: Record<string, string> = {}): ApiError {
    const row = this.row(name);
    const message = row.message.replace(/<([a-z_]+)>/g, (whole, key: string) => params[key] ?? whole);
    return new ApiError(name, row.http, row.code, message, detail);
  }

  /** Every row, for documentation. */
  all(): ErrorRow[] {
    return [...this.rows.values()];
  }
}

/** The rows exported by the built addon (throws with a build hint when the addon is missing). */
export function loadNativeErrorTable(root: string = packageRoot()): ErrorRow[] {
  let addon: { errorTable?: ErrorRow[] };
  try {
    addon = require('node-gyp-build')(root);
  } catch (err) {
    throw new Error(`the native addon is not built (npm run build:native): ${(err as Error).message}`);
  }
  if (!Array.isArray(addon.errorTable)) throw new Error('the native addon does not export errorTable');
  return addon.errorTable;
}

export function loadErrorCatalog(): ErrorCatalog {
  return new ErrorCatalog(loadNativeErrorTable());
}
