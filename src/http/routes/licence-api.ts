// The licence section of the account API (cloud mode), /account/v1/licences: an operator adds licences (with
// an activation code when the plan asks for one), sets their grants and limits, revokes them, releases a
// device binding, reads usage; every licence line carries its installation command. And the licence server's
// check-in, POST /licence/v1/check, which devices call with their licence key (no Api-Key, no session). The
// routes check shapes; the rules are LicenceService's and LicenceServer's (src/licensing/).
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { GRANTS } from '../../domain/grants';
import type { ErrorCatalog } from '../../errors';
import {
  DAY_PATTERN, FINGERPRINT_PATTERN, LICENCE_KEY_PATTERN, MAX_ROW_REQUESTS, MAX_USAGE_ROWS, MAX_VERSION_LENGTH,
  NONCE_PATTERN, REPORT_SERIES_PATTERN, type LicenceServer,
} from '../../licensing/cloud/licence-server';
import { MAX_LABEL_LENGTH, MAX_USAGE_DAYS, type LicenceInput, type LicencePatch, type LicenceService } from '../../licensing/cloud/licences';
import { bodyErrors, commonErrors, errorResponses } from '../schemas';
import { explainFieldErrors, noStore, OPERATOR_AUTH, operatorOf } from '../operator-replies';
import type { ErrorCode } from '../../error-table';

export const LICENCES_PREFIX = '/account/v1/licences';
export const LICENCE_CHECK_URL = '/licence/v1/check';

/** A check's body: 400 usage rows of about 80 bytes at most, and the rest is short. */
const CHECK_BODY_LIMIT = 64 * 1024;
const LICENCE_BODY_LIMIT = 16 * 1024;

const TIMESTAMP = { type: 'string', format: 'date-time' } as const;
const grantList = { type: 'array', maxItems: GRANTS.length, items: { type: 'string', enum: [...GRANTS] } } as const;
const maxPersons = {
  type: ['integer', 'null'], minimum: 0,
  description: 'Most persons the device may hold enrolled; null = no limit.',
} as const;
const expires = {
  type: ['string', 'null'], maxLength: 40,
  description: 'ISO 8601 date or date-time in the future; null = no expiry.',
} as const;
const perOperation = {
  type: 'object', additionalProperties: false,
  properties: Object.fromEntries(GRANTS.map((g) => [g, { type: 'integer', minimum: 0 }])),
} as const;

const licenceView = {
  type: 'object',
  required: ['licenceId', 'label', 'status', 'grants', 'limits', 'expires', 'created', 'updated', 'licenceKey',
    'installCommand', 'device', 'lastCheck', 'usageToday'],
  additionalProperties: false,
  properties: {
    licenceId: { type: 'string' },
    label: { type: 'string' },
    status: { type: 'string', enum: ['active', 'revoked'] },
    grants: grantList,
    limits: { type: 'object', required: ['maxPersons'], additionalProperties: false, properties: { maxPersons } },
    expires: { type: ['string', 'null'], format: 'date-time' },
    created: TIMESTAMP,
    updated: TIMESTAMP,
    licenceKey: { type: 'string', description: 'fcl_...: what the device checks in with. It fetches a licence document for one device only.' },
    installCommand: {
      type: ['string', 'null'],
      description: 'One POSIX shell line to run as root on the device: checks the board, then downloads, checks and installs ' +
        'face-check with this licence. null when the cloud cannot serve a package that installs without compiling (installUnavailable says why).',
    },
    installUnavailable: { type: 'string', description: 'Present when installCommand is null: why the cloud offers no command.' },
    device: {
      type: ['object', 'null'], required: ['fingerprint', 'boundAt'], additionalProperties: false,
      description: 'The device the licence is bound to (its first check); null until then or after a release.',
      properties: { fingerprint: { type: 'string' }, boundAt: TIMESTAMP },
    },
    lastCheck: {
      type: ['object', 'null'], required: ['at', 'address', 'version', 'persons'], additionalProperties: false,
      properties: { at: TIMESTAMP, address: { type: 'string' }, version: { type: 'string' }, persons: { type: 'integer', minimum: 0 } },
    },
    usageToday: { ...perOperation, description: 'Requests the device reported for today (UTC), per operation.' },
  },
} as const;

const licenceParams = {
  type: 'object', required: ['licenceId'], additionalProperties: false,
  properties: { licenceId: { type: 'string', pattern: '^lic_[0-9a-f]{16}$' } },
} as const;

type WithLicence = { Params: { licenceId: string } };

export interface LicenceApiOptions {
  errors: ErrorCatalog;
  licences: LicenceService;
  server: LicenceServer;
}

const licenceApi: FastifyPluginAsync<LicenceApiOptions> = async (app, { errors, licences, server }) => {
  explainFieldErrors(app, errors);

  const p = LICENCES_PREFIX;
  const tags = ['licence'];
  const signedIn = { ...commonErrors };
  const own: Record<number, readonly ErrorCode[]> = { ...signedIn, 400: ['R_003'], 404: ['LC_004'] };
  const scopeOf = (request: FastifyRequest) => ({ accountId: operatorOf(request).accountId });

  app.get(p, {
    config: { operator: true },
    schema: {
      summary: 'The account\'s licences', description: `Revoked ones included, oldest first. ${OPERATOR_AUTH}`, tags,
      response: {
        200: { type: 'object', required: ['licences'], additionalProperties: false, properties: { licences: { type: 'array', items: licenceView } } },
        ...errorResponses(signedIn),
      },
    },
  }, async (request, reply) => {
    noStore(reply);
    return { licences: await licences.list(scopeOf(request)) };
  });

  app.post<{ Body: LicenceInput & { grants: string[] } }>(p, {
    bodyLimit: LICENCE_BODY_LIMIT,
    config: { operator: true, jsonBody: true },
    schema: {
      summary: 'Add a licence',
      description: 'Adds a licence with its grants (which person-API requests the device may fulfil). An activation code ' +
        'is needed when the plan asks for one ([plans] free_activation_code / paid_activation_code): LC_001 without, ' +
        'LC_002 when refused (not recognised, used, expired or for another plan). LC_003 at the plan\'s licence count. ' +
        `${OPERATOR_AUTH}`,
      tags,
      body: {
        type: 'object', required: ['label', 'grants'], additionalProperties: false,
        properties: {
          label: { type: 'string', maxLength: MAX_LABEL_LENGTH },
          grants: grantList,
          maxPersons,
          expires,
          activationCode: { type: 'string', maxLength: 64, description: 'XXXX-XXXX-XXXX-XXXX; case and dashes do not matter.' },
        },
      },
      response: {
        200: licenceView,
        ...errorResponses({ ...signedIn, 400: ['R_002', 'R_003', 'LC_001', 'LC_002', 'LC_003'], ...bodyErrors }),
      },
    },
  }, async (request, reply) => {
    noStore(reply);
    return licences.create(operatorOf(request).accountId, request.body);
  });

  app.get<WithLicence>(`${p}/:licenceId`, {
    config: { operator: true },
    schema: { summary: 'One licence', description: OPERATOR_AUTH, tags, params: licenceParams, response: { 200: licenceView, ...errorResponses(own) } },
  }, async (request, reply) => {
    noStore(reply);
    return licences.get(scopeOf(request), request.params.licenceId);
  });

  app.patch<WithLicence & { Body: LicencePatch }>(`${p}/:licenceId`, {
    bodyLimit: LICENCE_BODY_LIMIT,
    config: { operator: true, jsonBody: true },
    schema: {
      summary: 'Change a licence',
      description: 'Sets label, grants, maxPersons or expires (the fields sent). The device applies them at its next check. ' +
        `A revoked licence is refused (LC_006). ${OPERATOR_AUTH}`,
      tags,
      params: licenceParams,
      body: {
        type: 'object', minProperties: 1, additionalProperties: false,
        properties: { label: { type: 'string', maxLength: MAX_LABEL_LENGTH }, grants: grantList, maxPersons, expires },
      },
      response: { 200: licenceView, ...errorResponses({ ...own, 400: ['R_002', 'R_003'], ...bodyErrors, 403: ['FORBIDDEN', 'LC_006'] }) },
    },
  }, async (request, reply) => {
    noStore(reply);
    return licences.view(await licences.update(scopeOf(request), request.params.licenceId, request.body));
  });

  app.post<WithLicence>(`${p}/:licenceId/revoke`, {
    config: { operator: true },
    schema: {
      summary: 'Revoke a licence',
      description: `For good: the device's next check is refused (LC_006) and it stops serving. ${OPERATOR_AUTH}`,
      tags, params: licenceParams, response: { 200: licenceView, ...errorResponses(own) },
    },
  }, async (request, reply) => {
    noStore(reply);
    return licences.view(await licences.revoke(scopeOf(request), request.params.licenceId));
  });

  app.post<WithLicence>(`${p}/:licenceId/release`, {
    config: { operator: true },
    schema: {
      summary: 'Release the device binding',
      description: `The next device to check in with the licence key binds to it (a replaced board). ${OPERATOR_AUTH}`,
      tags, params: licenceParams, response: { 200: licenceView, ...errorResponses(own) },
    },
  }, async (request, reply) => {
    noStore(reply);
    return licences.view(await licences.release(scopeOf(request), request.params.licenceId));
  });

  app.get<WithLicence & { Querystring: { days?: string } }>(`${p}/:licenceId/usage`, {
    config: { operator: true },
    schema: {
      summary: 'Requests a licence\'s device answered',
      description: `Per UTC day of the last \`days\` days (default 30, at most ${MAX_USAGE_DAYS}), as the device reports them at its checks. ${OPERATOR_AUTH}`,
      tags,
      params: licenceParams,
      querystring: {
        type: 'object', additionalProperties: false,
        properties: { days: { type: 'string', pattern: '^[0-9]{1,3}$', description: `1 to ${MAX_USAGE_DAYS}` } },
      },
      response: {
        200: {
          type: 'object', required: ['licenceId', 'from', 'to', 'days'], additionalProperties: false,
          properties: {
            licenceId: { type: 'string' },
            from: { type: 'string' },
            to: { type: 'string' },
            days: {
              type: 'array',
              items: {
                type: 'object', required: ['day', 'requests', 'total'], additionalProperties: false,
                properties: { day: { type: 'string' }, requests: perOperation, total: { type: 'integer', minimum: 0 } },
              },
            },
          },
        },
        ...errorResponses(own),
      },
    },
  }, async (request) => licences.usage(scopeOf(request), request.params.licenceId,
    request.query.days === undefined ? undefined : Number(request.query.days)));

  app.post(LICENCE_CHECK_URL, {
    bodyLimit: CHECK_BODY_LIMIT,
    // Each usage row is 3 values: the full 400 rows plus the other fields must pass the body's shape scan.
    config: { jsonBody: true, maxJsonValues: MAX_USAGE_ROWS * 3 + 50 },
    schema: {
      summary: 'A device\'s licence check',
      description: 'The device sends its licence key, fingerprint, a fresh nonce, its version and person count and the ' +
        'requests it answered not yet acknowledged (a numbered usageReport: a number added before is acknowledged, not added ' +
        'again); it gets the licence document signed with the service key ' +
        '(GET /licence/v1/public-key). The first check binds the licence to the fingerprint. Refused: LC_005 unknown key, ' +
        'LC_006 revoked, LC_007 expired, LC_008 bound to another device.',
      tags,
      body: {
        type: 'object',
        required: ['licenceKey', 'fingerprint', 'nonce', 'version', 'persons', 'usage'],
        additionalProperties: false,
        properties: {
          licenceKey: { type: 'string', pattern: LICENCE_KEY_PATTERN },
          fingerprint: { type: 'string', pattern: FINGERPRINT_PATTERN, description: 'HMAC-SHA256 of the machine id and camera serial, hex.' },
          nonce: { type: 'string', pattern: NONCE_PATTERN, description: 'Fresh per check; echoed inside the signed document.' },
          version: { type: 'string', maxLength: MAX_VERSION_LENGTH },
          persons: { type: 'integer', minimum: 0 },
          usage: {
            type: 'array', maxItems: MAX_USAGE_ROWS,
            items: {
              type: 'object', required: ['day', 'operation', 'requests'], additionalProperties: false,
              properties: {
                day: { type: 'string', pattern: DAY_PATTERN, description: 'UTC day, YYYY-MM-DD.' },
                operation: { type: 'string', enum: [...GRANTS] },
                requests: { type: 'integer', minimum: 0, maximum: MAX_ROW_REQUESTS },
              },
            },
          },
          usageReport: {
            type: 'object', required: ['series', 'number'], additionalProperties: false,
            description: 'Names the usage rows: the device store\'s report series and the report\'s number in it. Optional (older devices).',
            properties: {
              series: { type: 'string', pattern: REPORT_SERIES_PATTERN },
              number: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
            },
          },
        },
      },
      response: {
        200: {
          type: 'object', required: ['document', 'signature', 'algorithm'], additionalProperties: false,
          properties: {
            document: { type: 'string', description: 'The licence document\'s JSON, UTF-8, base64: the exact bytes signed.' },
            signature: { type: 'string', description: 'RSASSA-PKCS1-v1_5 SHA-256 over those bytes, base64.' },
            algorithm: { type: 'string', enum: ['rsa-sha256'] },
          },
        },
        ...errorResponses({
          400: ['R_002', 'R_003'], ...bodyErrors, 401: ['LC_005'], 403: ['LC_006', 'LC_007', 'LC_008'], 500: ['INTERNAL'], 503: ['SERVICE_UNAVAILABLE'],
        }),
      },
    },
  }, async (request, reply) => {
    noStore(reply);
    return server.check(request.body, request.ip);
  });
};

export default licenceApi;
