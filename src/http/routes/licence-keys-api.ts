// The device API keys of a licence line (cloud mode), /account/v1/licences/{licenceId}/keys: an operator
// creates, lists and revokes the keys the licence's device accepts. A key is answered once; the device learns
// its hash at its next licence check. The routes check shapes; the rules are DeviceKeyService's
// (src/licensing/cloud/licence-device-keys.ts).
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ROLES, type Role } from '../../domain/roles';
import type { ErrorCatalog } from '../../errors';
import { MAX_ACTIVE_DEVICE_KEYS, MAX_DEVICE_KEY_LABEL, type DeviceKeyService } from '../../licensing/cloud/licence-device-keys';
import { bodyErrors, commonErrors, errorResponses } from '../schemas';
import { explainFieldErrors, noStore, OPERATOR_AUTH, operatorOf } from '../operator-replies';
import { LICENCES_PREFIX } from './licence-api';
import type { ErrorCode } from '../../error-table';

const KEY_BODY_LIMIT = 64 * 1024;
const TIMESTAMP = { type: 'string', format: 'date-time' } as const;

const deviceKeyView = {
  type: 'object',
  required: ['keyId', 'licenceId', 'role', 'label', 'created', 'revoked', 'signing'],
  additionalProperties: false,
  properties: {
    keyId: { type: 'string', description: 'Public identifier of the key (never the key).' },
    licenceId: { type: 'string' },
    role: { type: 'string', enum: [...ROLES] },
    label: { type: 'string' },
    created: TIMESTAMP,
    revoked: { type: ['string', 'null'], format: 'date-time', description: 'When revoked, else null; revoked keys stay listed.' },
    signing: { type: 'boolean', description: 'Requests made with the key must be signed (spec 5, enterprise).' },
  },
} as const;

const licenceParams = {
  type: 'object', required: ['licenceId'], additionalProperties: false,
  properties: { licenceId: { type: 'string', pattern: '^lic_[0-9a-f]{16}$' } },
} as const;

const keyParams = {
  type: 'object', required: ['licenceId', 'keyId'], additionalProperties: false,
  properties: { ...licenceParams.properties, keyId: { type: 'string', pattern: '^[0-9a-f]{12}$' } },
} as const;

type WithLicence = { Params: { licenceId: string } };
type KeyCreation = WithLicence & { Body: { role: Role; label?: string; signing?: boolean; publicKey?: string } };

const licenceKeysApi: FastifyPluginAsync<{ errors: ErrorCatalog; deviceKeys: DeviceKeyService }> = async (app, { errors, deviceKeys }) => {
  explainFieldErrors(app, errors);
  const p = `${LICENCES_PREFIX}/:licenceId/keys`;
  const tags = ['licence'];
  const own: Record<number, readonly ErrorCode[]> = { ...commonErrors, 400: ['R_003'], 404: ['LC_004'] };
  const scopeOf = (request: FastifyRequest) => ({ accountId: operatorOf(request).accountId });

  app.get<WithLicence>(p, {
    config: { operator: true },
    schema: {
      summary: 'The device API keys of a licence',
      description: `The keys the licence's device accepts, revoked ones included; never the keys themselves. ${OPERATOR_AUTH}`,
      tags, params: licenceParams,
      response: {
        200: { type: 'object', required: ['keys'], additionalProperties: false, properties: { keys: { type: 'array', items: deviceKeyView } } },
        ...errorResponses(own),
      },
    },
  }, async (request) => ({ keys: await deviceKeys.list(scopeOf(request), request.params.licenceId) }));

  app.post<KeyCreation>(p, {
    bodyLimit: KEY_BODY_LIMIT,
    config: { operator: true, jsonBody: true },
    schema: {
      summary: 'Create a device API key',
      description: 'A key (fcd_...) the licence\'s device accepts in the Api-Key header from its next licence check, with the ' +
        'role\'s permissions (as a cloud key\'s). Answered only this once: the cloud keeps its SHA-256 and the device learns ' +
        'only that. signing: true makes an RSA-2048 signing key pair (the private key answered once, never stored); publicKey: ' +
        'the client\'s own RSA public key instead. Responses of the device are signed with the device\'s own service key ' +
        `(face-check keys service-public-key on the board). At most ${MAX_ACTIVE_DEVICE_KEYS} active keys per licence (R_003); ` +
        `a revoked licence takes none (LC_006). ${OPERATOR_AUTH}`,
      tags, params: licenceParams,
      body: {
        type: 'object', required: ['role'], additionalProperties: false,
        properties: {
          role: { type: 'string', enum: [...ROLES], description: 'full: everything; enrol: persons, no matching; match: matching, look-ups and the live face.' },
          label: { type: 'string', maxLength: MAX_DEVICE_KEY_LABEL },
          signing: { type: 'boolean', description: 'Requests made with the key must be signed (spec 5, enterprise).' },
          publicKey: { type: 'string', minLength: 1, maxLength: 16 * 1024 },
        },
      },
      response: {
        200: {
          type: 'object',
          required: [...deviceKeyView.required, 'key'],
          additionalProperties: false,
          properties: {
            ...deviceKeyView.properties,
            key: { type: 'string', description: 'The Api-Key header value for the device; shown only this once.' },
            signingKey: { type: 'string', description: 'PKCS#8 PEM private key (signing: true); shown only this once, never stored.' },
          },
        },
        ...errorResponses({ ...own, 400: ['R_002', 'R_003'], ...bodyErrors, 403: ['FORBIDDEN', 'LC_006'] }),
      },
    },
  }, async (request, reply) => {
    noStore(reply);
    return deviceKeys.create(scopeOf(request), request.params.licenceId, request.body);
  });

  app.delete<{ Params: { licenceId: string; keyId: string } }>(`${p}/:keyId`, {
    config: { operator: true },
    schema: {
      summary: 'Revoke a device API key',
      description: 'The device refuses the key from its next licence check; the key stays listed. 404 for a key the licence does ' +
        `not hold. ${OPERATOR_AUTH}`,
      tags, params: keyParams,
      response: { 200: deviceKeyView, ...errorResponses({ ...own, 404: ['LC_004', 'NOT_FOUND'] }) },
    },
  }, async (request) => deviceKeys.revoke(scopeOf(request), request.params.licenceId, request.params.keyId));
};

export default licenceKeysApi;
