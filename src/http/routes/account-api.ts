// The account API (cloud mode), /account/v1: registration with the free test plan's API key (spec 5: "A free
// test plan provides a key"), sign-in sessions, the account and its quota, the password, and the account's own
// API keys. The routes check shapes and call the AccountService (src/accounts/accounts.ts), which holds the
// rules. Operators authenticate with "Authorization: Bearer <session token>" (plugins/operator-session.ts).
import type { FastifyPluginAsync } from 'fastify';
import type { ErrorCatalog } from '../../errors';
import { PLANS } from '../../domain/accounts';
import { ROLES, type Role } from '../../domain/roles';
import { MAX_EMAIL_LENGTH, MAX_PASSWORD_LENGTH } from '../../accounts/accounts';
import { bearerToken } from '../plugins/operator-session';
import { bodyErrors, commonErrors, errorResponses } from '../schemas';
import { explainFieldErrors, noStore, OPERATOR_AUTH, operatorOf } from '../operator-replies';
import type { ErrorCode } from '../../error-table';

export const ACCOUNT_API_PREFIX = '/account/v1';

/** Account bodies are small (a PEM public key is the largest field); a bigger one is refused unread. */
const ACCOUNT_BODY_LIMIT = 64 * 1024;

const TIMESTAMP = { type: 'string', format: 'date-time', description: 'ISO 8601 UTC with milliseconds' } as const;
const NULLABLE_TIMESTAMP = { type: ['string', 'null'], format: 'date-time' } as const;

const credentialsBody = {
  type: 'object',
  required: ['email', 'password'],
  additionalProperties: false,
  properties: {
    email: { type: 'string', minLength: 1, maxLength: MAX_EMAIL_LENGTH, description: 'Compared case-insensitively.' },
    password: {
      type: 'string', minLength: 1, maxLength: MAX_PASSWORD_LENGTH,
      description: 'When set (registration, change): at least [accounts] min_password_length characters (default 10), ' +
        'not a common or breached password, not only spaces, no control characters (docs/back-office.md).',
    },
  },
} as const;

const registrationBody = {
  ...credentialsBody,
  properties: {
    ...credentialsBody.properties,
    activationCode: {
      type: 'string', maxLength: 64,
      description: 'The registration code an administrator issued ([accounts] registration = activation-code) or sent ' +
        'with an invitation to this address (invitation); not needed when registration is open.',
    },
  },
} as const;

const accountView = {
  type: 'object',
  required: ['accountId', 'email', 'plan', 'role', 'created'],
  additionalProperties: false,
  properties: {
    accountId: { type: 'string' },
    email: { type: 'string' },
    plan: { type: 'string', enum: [...PLANS] },
    role: { type: 'string', enum: ['operator', 'administrator'] },
    created: TIMESTAMP,
  },
} as const;

const apiKeyView = {
  type: 'object',
  required: ['keyId', 'role', 'label', 'created', 'revoked', 'signing', 'lastUsed'],
  additionalProperties: false,
  properties: {
    keyId: { type: 'string', description: 'Public identifier of the key (never the key).' },
    role: { type: 'string', enum: [...ROLES] },
    label: { type: 'string' },
    created: TIMESTAMP,
    revoked: { ...NULLABLE_TIMESTAMP, description: 'When revoked, else null; revoked keys stay listed.' },
    signing: { type: 'boolean', description: 'Requests made with the key must be signed (spec 5, enterprise).' },
    lastUsed: { ...NULLABLE_TIMESTAMP, description: 'Last successful authentication, to the minute; null when never used.' },
  },
} as const;

const keyIdParams = {
  type: 'object',
  required: ['keyId'],
  additionalProperties: false,
  properties: { keyId: { type: 'string', pattern: '^[0-9a-f]{12}$' } },
} as const;

type Credentials = { Body: { email: string; password: string } };
type Registration = { Body: { email: string; password: string; activationCode?: string } };
type PasswordChange = { Body: { currentPassword: string; newPassword: string } };
type KeyCreation = { Body: { role: Role; label?: string; signing?: boolean; publicKey?: string } };
type WithKeyId = { Params: { keyId: string } };

const accountApi: FastifyPluginAsync<{ errors: ErrorCatalog }> = async (app, { errors }) => {
  explainFieldErrors(app, errors);

  const p = ACCOUNT_API_PREFIX;
  const tags = ['account'];
  const anyone: Record<number, readonly ErrorCode[]> = { 400: ['R_002', 'R_003'], ...bodyErrors, 500: ['INTERNAL'], 503: ['SERVICE_UNAVAILABLE'] };

  app.post<Registration>(`${p}/register`, {
    bodyLimit: ACCOUNT_BODY_LIMIT,
    config: { jsonBody: true },
    schema: {
      summary: 'Register an account',
      description: 'Opens an account on the free test plan (or the registration code\'s plan) and answers its first API ' +
        'key (role full), shown only this once. [accounts] registration: open (anyone), activation-code or invitation ' +
        '(activationCode needed: LC_001 without, LC_002 when refused), closed (403). AC_001 when the address is ' +
        'registered. Attempts are limited per client address and network ([accounts] registrations_per_address, ' +
        'registrations_per_network per registration_window_hours), taken addresses included: AC_003 (429, Retry-After).',
      tags,
      body: registrationBody,
      response: {
        200: {
          type: 'object', required: ['account', 'apiKey'], additionalProperties: false,
          properties: {
            account: accountView,
            apiKey: {
              type: 'object', required: ['keyId', 'key', 'role', 'label'], additionalProperties: false,
              properties: { keyId: { type: 'string' }, key: { type: 'string' }, role: { type: 'string' }, label: { type: 'string' } },
            },
          },
        },
        ...errorResponses({ ...anyone, 400: ['R_002', 'R_003', 'AC_001', 'LC_001', 'LC_002'], 403: ['FORBIDDEN'], 429: ['AC_003'] }),
      },
    },
  }, async (request, reply) => {
    noStore(reply);
    return app.accounts.register(request.body.email, request.body.password, request.ip, request.body.activationCode);
  });

  app.post<Credentials>(`${p}/sessions`, {
    bodyLimit: ACCOUNT_BODY_LIMIT,
    config: { jsonBody: true },
    schema: {
      summary: 'Sign in',
      description: 'Answers a session token for the Authorization header. The session ends after [accounts] ' +
        'session_idle_minutes unused or session_max_hours after sign-in (expires). Repeated failures per account and ' +
        'client address, per client address, or (at addresses the account never signed in from) per account are ' +
        'refused with AC_003 (429, Retry-After), even with the right password.',
      tags,
      body: credentialsBody,
      response: {
        200: {
          type: 'object', required: ['token', 'expires'], additionalProperties: false,
          properties: { token: { type: 'string' }, expires: TIMESTAMP },
        },
        ...errorResponses({ ...anyone, 401: ['AC_002'], 429: ['AC_003'] }),
      },
    },
  }, async (request, reply) => {
    noStore(reply);
    return app.accounts.signIn(request.body.email, request.body.password, request.ip);
  });

  const signedIn = { ...commonErrors };

  app.delete(`${p}/sessions/current`, {
    config: { operator: true },
    schema: {
      summary: 'Sign out', description: `Ends the session of the request's token. ${OPERATOR_AUTH}`, tags,
      response: {
        200: { type: 'object', required: ['signedOut'], additionalProperties: false, properties: { signedOut: { type: 'boolean' } } },
        ...errorResponses(signedIn),
      },
    },
  }, async (request) => {
    operatorOf(request);
    await app.accounts.signOut(bearerToken(request)!);
    return { signedOut: true };
  });

  app.get(`${p}/account`, {
    config: { operator: true },
    schema: {
      summary: 'The signed-in account',
      description: `The account, its plan's request quota today (UTC) and its enrolled persons. ${OPERATOR_AUTH}`,
      tags,
      response: {
        200: {
          type: 'object',
          required: [...accountView.required, 'quota', 'persons'],
          additionalProperties: false,
          properties: {
            ...accountView.properties,
            quota: {
              type: 'object', required: ['requestsPerDay', 'usedToday', 'leftToday'], additionalProperties: false,
              properties: {
                requestsPerDay: { type: 'integer', minimum: 0, description: '0 = unlimited' },
                usedToday: { type: 'integer', minimum: 0 },
                leftToday: { type: ['integer', 'null'], minimum: 0, description: 'null when unlimited' },
              },
            },
            persons: { type: 'integer', minimum: 0 },
          },
        },
        ...errorResponses(signedIn),
      },
    },
  }, async (request) => {
    const view = await app.accounts.accountView(operatorOf(request).accountId);
    if (!view) throw errors.explain('Unauthorized', 'sign in first: the session\'s account no longer exists');
    return view;
  });

  app.put<PasswordChange>(`${p}/password`, {
    bodyLimit: ACCOUNT_BODY_LIMIT,
    config: { operator: true, jsonBody: true },
    schema: {
      summary: 'Change the password',
      description: 'Needs the current password; ends every other session of the account. Never refused by the sign-in ' +
        `throttle; repeated wrong current passwords in one session are (AC_003). ${OPERATOR_AUTH}`,
      tags,
      body: {
        type: 'object', required: ['currentPassword', 'newPassword'], additionalProperties: false,
        properties: {
          currentPassword: { type: 'string', minLength: 1, maxLength: MAX_PASSWORD_LENGTH },
          newPassword: { type: 'string', minLength: 1, maxLength: MAX_PASSWORD_LENGTH },
        },
      },
      response: {
        200: { type: 'object', required: ['changed'], additionalProperties: false, properties: { changed: { type: 'boolean' } } },
        ...errorResponses({ ...signedIn, 400: ['R_002', 'R_003'], ...bodyErrors, 401: ['UNAUTHORIZED', 'AC_002'], 429: ['AC_003'] }),
      },
    },
  }, async (request) => {
    await app.accounts.changePassword(operatorOf(request), bearerToken(request)!, request.body.currentPassword,
      request.body.newPassword);
    return { changed: true };
  });

  app.get(`${p}/keys`, {
    config: { operator: true },
    schema: {
      summary: 'The account\'s API keys', description: `Revoked keys included; never the keys themselves. ${OPERATOR_AUTH}`, tags,
      response: {
        200: {
          type: 'object', required: ['keys'], additionalProperties: false,
          properties: { keys: { type: 'array', items: apiKeyView } },
        },
        ...errorResponses(signedIn),
      },
    },
  }, async (request) => ({ keys: await app.accounts.listKeys(operatorOf(request).accountId) }));

  app.post<KeyCreation>(`${p}/keys`, {
    bodyLimit: ACCOUNT_BODY_LIMIT,
    config: { operator: true, jsonBody: true },
    schema: {
      summary: 'Create an API key',
      description: 'Answers the key (and, with signing: true, its RSA-2048 signing key) only this once. publicKey: the ' +
        `client's own RSA public key (PEM, at least 2048 bits) instead. ${OPERATOR_AUTH}`,
      tags,
      body: {
        type: 'object', required: ['role'], additionalProperties: false,
        properties: {
          role: { type: 'string', enum: [...ROLES], description: 'full: everything; enrol: persons, no matching; match: matching and look-ups.' },
          label: { type: 'string', maxLength: 200 },
          signing: { type: 'boolean', description: 'Requests made with the key must be signed (spec 5, enterprise).' },
          publicKey: { type: 'string', minLength: 1, maxLength: 16 * 1024 },
        },
      },
      response: {
        200: {
          type: 'object',
          required: ['keyId', 'key', 'role', 'label', 'created', 'signing'],
          additionalProperties: false,
          properties: {
            keyId: { type: 'string' },
            key: { type: 'string', description: 'The Api-Key header value; shown only this once.' },
            role: { type: 'string', enum: [...ROLES] },
            label: { type: 'string' },
            created: TIMESTAMP,
            signing: { type: 'boolean' },
            signingKey: { type: 'string', description: 'PKCS#8 PEM private key (signing: true); shown only this once, never stored.' },
            servicePublicKey: { type: 'string', description: 'The service\'s public key (PEM) that signs responses.' },
          },
        },
        ...errorResponses({ ...signedIn, 400: ['R_002', 'R_003'], ...bodyErrors }),
      },
    },
  }, async (request, reply) => {
    noStore(reply);
    return app.accounts.createKey(operatorOf(request).accountId, request.body);
  });

  app.delete<WithKeyId>(`${p}/keys/:keyId`, {
    config: { operator: true },
    schema: {
      summary: 'Revoke an API key',
      description: `Revokes one of the account's keys at once; it stays listed. 404 for a key of no account or another. ${OPERATOR_AUTH}`,
      tags,
      params: keyIdParams,
      response: { 200: apiKeyView, ...errorResponses({ ...signedIn, 400: ['R_003'], 404: ['NOT_FOUND'] }) },
    },
  }, async (request) => app.accounts.revokeKey(operatorOf(request).accountId, request.params.keyId));
};

export default accountApi;
