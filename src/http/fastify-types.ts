// Type augmentation of fastify for what the plugins add.
import type { Permission } from '../services/permissions';
import type { Principal } from '../services/auth';
import type { Services } from '../services';
import type { Operator } from '../domain/accounts';
import type { AccountService } from '../accounts/accounts';
import type { LicenceService } from '../licensing/cloud/licences';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The permission the route needs; routes without one are public (docs, 404). */
    permission?: Permission;
    /** The route expects a JSON object body (POST/PUT). */
    jsonBody?: boolean;
    /** Most JSON values its body may hold, when not the default (src/http/json-shape.ts MAX_JSON_VALUES). */
    maxJsonValues?: number;
    /** The route runs face analyses: it counts towards, and is refused by, [server] max_engine_queue. */
    engine?: boolean;
    /**
     * An account API route: needs a signed-in operator (Authorization: Bearer <session token>);
     * 'administrator' also needs the administrator role.
     */
    operator?: true | 'administrator';
    /** A stand-in that answers 404: not counted as an existing route for 405 answers. */
    unlisted?: boolean;
  }
  interface FastifyRequest {
    principal?: Principal;
    /** The signed-in operator of an account API route. */
    operator?: Operator;
    /** The request body exactly as received (JSON bodies), for request signatures. */
    rawBody?: string;
    /** A body that did not parse: answered (R_002) after authentication and the signature check. */
    bodyError?: Error;
    /** The body was refused before it was read to the end: answer, then close the connection. */
    closeAfterReply?: boolean;
  }
  interface FastifyInstance {
    services: Services;
    /** Cloud mode: operators' accounts, sessions and their API keys. */
    accounts: AccountService;
    /** Cloud mode: the accounts' device licences. */
    licences: LicenceService;
  }
}

export {};
