// A service's refusal, worded for the form that caused it. The services explain their refusals (the text
// after the table's message says what to fix); anything that is not such a refusal is a fault and rethrown.
import { ApiError } from '../errors';

export interface Refusal {
  status: number;
  message: string;
}

export function refusalOf(err: unknown): Refusal {
  if (err instanceof ApiError && err.statusCode < 500) {
    if (err.retryAfterSeconds !== undefined) {
      const minutes = Math.max(1, Math.ceil(err.retryAfterSeconds / 60));
      return { status: err.statusCode, message: `Too many attempts, try again in ${minutes} minute${minutes === 1 ? '' : 's'}.` };
    }
    return { status: err.statusCode, message: err.publicMessage };
  }
  throw err;
}
