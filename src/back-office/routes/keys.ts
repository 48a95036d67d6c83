// API keys of the signed-in operator's account: list, create (optionally with a signing key pair or the
// client's own public key), show a new key once, download its private signing key once, revoke after a
// confirmation. Keys are made and revoked by the AccountService, as in the account API.
import type { FastifyPluginAsync } from 'fastify';
import { isRole } from '../../domain/roles';
import type { KeyRequest } from '../../accounts/accounts';
import type { BackOfficeContext } from '../context';
import { field, type FormBody } from '../form-body';
import { noticeOf, withNotice } from '../notices';
import { PATHS } from '../paths';
import { refusalOf } from '../problems';
import { redirectTo, sendPage } from '../respond';
import { operatorOf, visitorOf } from '../session';
import { notFoundPage } from '../views/errors';
import { keysPage, newKeyPage, revokeKeyPage } from '../views/keys';

/** The account API's bounds on the same fields. */
const MAX_KEY_LABEL = 200;
const MAX_PUBLIC_KEY = 16 * 1024;
const SIGNING_CHOICES = ['none', 'generate', 'upload'] as const;

type Params = { Params: { keyId: string } };

const keyRoutes: FastifyPluginAsync<{ ctx: BackOfficeContext }> = async (app, { ctx }) => {
  app.get('/keys', async (request, reply) => {
    const operator = operatorOf(request);
    return sendPage(reply, keysPage({
      operator, csrf: visitorOf(request).csrf, keys: await ctx.accounts.listKeys(operator.accountId), notice: noticeOf(request.query),
    }));
  });

  app.post('/keys', async (request, reply) => {
    const operator = operatorOf(request);
    const visitor = visitorOf(request);
    const body = request.body as FormBody;
    const form = { label: field(body, 'label'), role: field(body, 'role'), signing: field(body, 'signing') || 'none', publicKey: field(body, 'publicKey') };
    const refuse = async (status: number, message: string) => sendPage(reply, keysPage({
      operator, csrf: visitor.csrf, keys: await ctx.accounts.listKeys(operator.accountId), problem: message, form,
    }), status);
    if (!isRole(form.role)) return refuse(400, 'Choose one of the roles offered.');
    if (form.label.length > MAX_KEY_LABEL) return refuse(400, `The label has at most ${MAX_KEY_LABEL} characters.`);
    if (!(SIGNING_CHOICES as readonly string[]).includes(form.signing)) return refuse(400, 'Choose one of the request signing options.');
    const request_: KeyRequest = { role: form.role, label: form.label.trim() };
    if (form.signing === 'generate') request_.signing = true;
    if (form.signing === 'upload') {
      if (!form.publicKey.trim()) return refuse(400, 'Paste the RSA public key (PEM) for "use my own public key".');
      if (form.publicKey.length > MAX_PUBLIC_KEY) return refuse(400, `The public key has at most ${MAX_PUBLIC_KEY} characters.`);
      request_.publicKey = form.publicKey;
    }
    let created;
    try {
      created = await ctx.accounts.createKey(operator.accountId, request_);
    } catch (err) {
      const refusal = refusalOf(err);
      return refuse(refusal.status, refusal.message);
    }
    ctx.reveals.put(visitor.binding, {
      apiKey: { keyId: created.keyId, key: created.key, role: created.role, label: created.label, servicePublicKey: created.servicePublicKey },
      signingKey: created.signingKey ? { keyId: created.keyId, pem: created.signingKey } : undefined,
    });
    return redirectTo(reply, PATHS.newKey);
  });

  // The one page that shows a new key; taking it from the waiting secrets means a reload shows it no more.
  app.get('/keys/new', async (request, reply) => {
    const visitor = visitorOf(request);
    return sendPage(reply, newKeyPage({
      operator: operatorOf(request), csrf: visitor.csrf, shown: ctx.reveals.takeApiKey(visitor.binding),
      signingKeyPending: ctx.reveals.hasSigningKey(visitor.binding), notice: noticeOf(request.query),
    }));
  });

  app.get('/keys/new/signing-key.pem', async (request, reply) => {
    const visitor = visitorOf(request);
    const signing = ctx.reveals.takeSigningKey(visitor.binding);
    if (!signing) return sendPage(reply, notFoundPage({ operator: visitor.operator, csrf: visitor.csrf }), 404);
    return reply.code(200)
      .header('content-type', 'application/x-pem-file')
      .header('content-disposition', `attachment; filename="face-check-signing-key-${signing.keyId}.pem"`)
      .header('cache-control', 'no-store')
      .send(signing.pem);
  });

  const ownKey = async (accountId: string, keyId: string) => (await ctx.accounts.listKeys(accountId)).find((k) => k.keyId === keyId);

  app.get<Params>('/keys/:keyId/revoke', async (request, reply) => {
    const operator = operatorOf(request);
    const visitor = visitorOf(request);
    const key = await ownKey(operator.accountId, request.params.keyId);
    // Another account's key looks exactly like a missing one.
    if (!key) return sendPage(reply, notFoundPage({ operator, csrf: visitor.csrf }), 404);
    if (key.revoked) return redirectTo(reply, PATHS.keys);
    return sendPage(reply, revokeKeyPage({ operator, csrf: visitor.csrf, key }));
  });

  app.post<Params>('/keys/:keyId/revoke', async (request, reply) => {
    const operator = operatorOf(request);
    const visitor = visitorOf(request);
    try {
      await ctx.accounts.revokeKey(operator.accountId, request.params.keyId);
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal.status === 404) return sendPage(reply, notFoundPage({ operator, csrf: visitor.csrf }), 404);
      throw err;
    }
    return redirectTo(reply, withNotice(PATHS.keys, 'key-revoked'));
  });
};

export default keyRoutes;
