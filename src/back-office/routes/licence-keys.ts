// The device API keys on a licence's page: create (optionally with a signing key pair or the client's own
// public key), show a new key once, revoke after a confirmation. Every rule is the DeviceKeyService's (the
// account API calls the same methods); another account's licence is "not found", like a missing one.
import type { FastifyPluginAsync } from 'fastify';
import { isRole } from '../../domain/roles';
import { MAX_DEVICE_KEY_LABEL, type DeviceKeyRequest } from '../../licensing/cloud/licence-device-keys';
import type { BackOfficeContext } from '../context';
import { field, type FormBody } from '../form-body';
import { withNotice } from '../notices';
import { PATHS } from '../paths';
import { refusalOf } from '../problems';
import { redirectTo, sendPage } from '../respond';
import { operatorOf, visitorOf } from '../session';
import { notFoundPage } from '../views/errors';
import { newDeviceKeyPage, revokeDeviceKeyPage } from '../views/licence-keys';
import { licenceDetail } from './licences';

const MAX_PUBLIC_KEY = 16 * 1024;
const SIGNING_CHOICES = ['none', 'generate', 'upload'] as const;

type Params = { Params: { licenceId: string } };
type KeyParams = { Params: { licenceId: string; keyId: string } };

const licenceKeyRoutes: FastifyPluginAsync<{ ctx: BackOfficeContext }> = async (app, { ctx }) => {
  app.post<Params>('/licences/:licenceId/keys', async (request, reply) => {
    const operator = operatorOf(request);
    const visitor = visitorOf(request);
    const { licenceId } = request.params;
    const body = request.body as FormBody;
    const form = { label: field(body, 'label'), role: field(body, 'role'), signing: field(body, 'signing') || 'none', publicKey: field(body, 'publicKey') };
    const refuse = (status: number, message: string) =>
      licenceDetail(ctx, reply, operator, visitor.csrf, licenceId, { deviceKeyProblem: message, deviceKeyForm: form }, status);
    if (!isRole(form.role)) return refuse(400, 'Choose one of the roles offered.');
    if (form.label.length > MAX_DEVICE_KEY_LABEL) return refuse(400, `The label has at most ${MAX_DEVICE_KEY_LABEL} characters.`);
    if (!(SIGNING_CHOICES as readonly string[]).includes(form.signing)) return refuse(400, 'Choose one of the request signing options.');
    const wanted: DeviceKeyRequest = { role: form.role, label: form.label.trim() };
    if (form.signing === 'generate') wanted.signing = true;
    if (form.signing === 'upload') {
      if (!form.publicKey.trim()) return refuse(400, 'Paste the RSA public key (PEM) for "use my own public key".');
      if (form.publicKey.length > MAX_PUBLIC_KEY) return refuse(400, `The public key has at most ${MAX_PUBLIC_KEY} characters.`);
      wanted.publicKey = form.publicKey;
    }
    let created;
    try {
      created = await ctx.deviceKeys.create({ accountId: operator.accountId }, licenceId, wanted);
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal.status === 404) return sendPage(reply, notFoundPage({ operator, csrf: visitor.csrf }), 404);
      return refuse(refusal.status, refusal.message);
    }
    ctx.reveals.put(visitor.binding, {
      apiKey: { keyId: created.keyId, key: created.key, role: created.role, label: created.label },
      signingKey: created.signingKey ? { keyId: created.keyId, pem: created.signingKey } : undefined,
    });
    return redirectTo(reply, PATHS.newDeviceKey(licenceId));
  });

  // The one page that shows a new device key; taking it from the waiting secrets means a reload shows it no more.
  app.get<Params>('/licences/:licenceId/keys/new', async (request, reply) => {
    const visitor = visitorOf(request);
    return sendPage(reply, newDeviceKeyPage({
      operator: operatorOf(request), csrf: visitor.csrf, licenceId: request.params.licenceId,
      shown: ctx.reveals.takeApiKey(visitor.binding), signingKeyPending: ctx.reveals.hasSigningKey(visitor.binding),
    }));
  });

  /** The licence's key, or undefined for a key or licence the account does not hold. */
  const ownKey = async (accountId: string, licenceId: string, keyId: string) => {
    try {
      return (await ctx.deviceKeys.list({ accountId }, licenceId)).find((k) => k.keyId === keyId);
    } catch (err) {
      if (refusalOf(err).status === 404) return undefined;
      throw err;
    }
  };

  app.get<KeyParams>('/licences/:licenceId/keys/:keyId/revoke', async (request, reply) => {
    const operator = operatorOf(request);
    const visitor = visitorOf(request);
    const { licenceId, keyId } = request.params;
    const key = await ownKey(operator.accountId, licenceId, keyId);
    if (!key) return sendPage(reply, notFoundPage({ operator, csrf: visitor.csrf }), 404);
    if (key.revoked) return redirectTo(reply, PATHS.licence(licenceId));
    return sendPage(reply, revokeDeviceKeyPage({ operator, csrf: visitor.csrf, licenceId, key }));
  });

  app.post<KeyParams>('/licences/:licenceId/keys/:keyId/revoke', async (request, reply) => {
    const operator = operatorOf(request);
    const visitor = visitorOf(request);
    const { licenceId, keyId } = request.params;
    try {
      await ctx.deviceKeys.revoke({ accountId: operator.accountId }, licenceId, keyId);
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal.status === 404) return sendPage(reply, notFoundPage({ operator, csrf: visitor.csrf }), 404);
      throw err;
    }
    return redirectTo(reply, withNotice(PATHS.licence(licenceId), 'device-key-revoked'));
  });
};

export default licenceKeyRoutes;
