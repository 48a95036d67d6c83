// API errors: every HTTP error body ({code, message}) and status is taken from the one error table
// (error-table.ts).
import { ERROR_TABLE, type ErrorName, type ErrorRow } from './error-table';

export { ERROR_NAMES, isErrorName, type ErrorCode, type ErrorName, type ErrorRow } from './error-table';

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
  row(name: ErrorName): ErrorRow {
    return ERROR_TABLE[name];
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
}
