// The licence section: list, add (with the activation code where the plan needs one), one licence's page
// with its grants form, revoke after a confirmation, release the device binding. Every rule is the
// LicenceService's (the account API calls the same methods); an operator's scope is the own account, so
// another account's licence is "not found" exactly like a missing one.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { Operator } from '../../domain/accounts';
import { MAX_LABEL_LENGTH, type LicencePatch } from '../../licensing/cloud/licences';
import type { BackOfficeContext } from '../context';
import { field, fields, type FormBody } from '../form-body';
import { noticeOf, withNotice } from '../notices';
import { PATHS } from '../paths';
import { refusalOf } from '../problems';
import { redirectTo, sendPage } from '../respond';
import { operatorOf, visitorOf } from '../session';
import { notFoundPage } from '../views/errors';
import { licencePage, revokeLicencePage, type InstallForm } from '../views/licence';
import { parseInstallChoice, type InstallChoice } from '../../install/install-choice';
import { installCameras } from '../../install/device-ini';
import type { DeviceKeyForm } from '../views/licence-keys';
import { licencesPage } from '../views/licences';

/** The account API's bound on an activation code field. */
const MAX_CODE_LENGTH = 64;
const USAGE_DAYS = 30;

type Params = { Params: { licenceId: string } };

/** One licence's page (with its device keys), or the not-found page for an id the account does not hold. */
export async function licenceDetail(ctx: BackOfficeContext, reply: FastifyReply, operator: Operator, csrf: string, licenceId: string,
  extra: { notice?: string; problem?: string; deviceKeyProblem?: string; deviceKeyForm?: DeviceKeyForm; install?: InstallForm } = {}, status = 200) {
  const scope = { accountId: operator.accountId };
  let choice: InstallChoice | undefined;
  let installProblem: string | undefined;
  try {
    choice = extra.install && parseInstallChoice(extra.install.camera, extra.install.port);
  } catch (err) {
    installProblem = (err as Error).message;
  }
  let licence;
  try {
    licence = await ctx.licences.get(scope, licenceId, choice);
  } catch (err) {
    if (refusalOf(err).status === 404) return sendPage(reply, notFoundPage({ operator, csrf }), 404);
    throw err;
  }
  const usage = await ctx.licences.usage(scope, licenceId, USAGE_DAYS);
  const deviceKeys = await ctx.deviceKeys.list(scope, licenceId);
  return sendPage(reply, licencePage({ operator, csrf, licence, usage, deviceKeys, installChoices: installCameras(), installProblem, ...extra }), status);
}

const licenceRoutes: FastifyPluginAsync<{ ctx: BackOfficeContext }> = async (app, { ctx }) => {
  const scopeOf = (operator: Operator) => ({ accountId: operator.accountId });

  const listPage = async (operator: Operator, csrf: string, extra: { notice?: string; problem?: string; form?: { label: string; activationCode: string } }) =>
    licencesPage({
      operator, csrf, licences: await ctx.licences.list(scopeOf(operator)),
      codeRequired: await ctx.licences.activationCodeRequired(operator.accountId), ...extra,
    });

  /** One licence's page, or the not-found page for an id the account does not hold. */
  const detail = async (reply: FastifyReply, operator: Operator, csrf: string, licenceId: string,
    extra: { notice?: string; problem?: string } = {}, status = 200) => licenceDetail(ctx, reply, operator, csrf, licenceId, extra, status);

  app.get('/licences', async (request, reply) => {
    const operator = operatorOf(request);
    return sendPage(reply, await listPage(operator, visitorOf(request).csrf, { notice: noticeOf(request.query) }));
  });

  app.post('/licences', async (request, reply) => {
    const operator = operatorOf(request);
    const csrf = visitorOf(request).csrf;
    const body = request.body as FormBody;
    const form = { label: field(body, 'label'), activationCode: field(body, 'activationCode') };
    const refuse = async (status: number, problem: string) => sendPage(reply, await listPage(operator, csrf, { problem, form }), status);
    if (form.label.length > MAX_LABEL_LENGTH) return refuse(400, `The label has at most ${MAX_LABEL_LENGTH} characters.`);
    if (form.activationCode.length > MAX_CODE_LENGTH) return refuse(400, 'That is not an activation code (XXXX-XXXX-XXXX-XXXX).');
    let licenceId: string;
    try {
      // Added with no grants: the operator sets them on the licence's page (spec 1, step 3).
      ({ licenceId } = await ctx.licences.create(operator.accountId, {
        label: form.label, grants: [], activationCode: form.activationCode || undefined,
      }));
    } catch (err) {
      const refusal = refusalOf(err);
      return refuse(refusal.status, refusal.message);
    }
    return redirectTo(reply, withNotice(PATHS.licence(licenceId), 'licence-added'));
  });

  // ?camera=&port=: the camera and port the installation command sets up (a GET form on the page).
  app.get<Params>('/licences/:licenceId', async (request, reply) => {
    const query = (request.query ?? {}) as Record<string, unknown>;
    const text = (v: unknown) => (typeof v === 'string' ? v.slice(0, 32) : '');
    const install = { camera: text(query.camera), port: text(query.port) };
    return licenceDetail(ctx, reply, operatorOf(request), visitorOf(request).csrf, request.params.licenceId, { notice: noticeOf(request.query), install });
  });

  app.post<Params>('/licences/:licenceId/grants', async (request, reply) => {
    const operator = operatorOf(request);
    const csrf = visitorOf(request).csrf;
    const { licenceId } = request.params;
    const body = request.body as FormBody;
    const label = field(body, 'label');
    const maxPersons = field(body, 'maxPersons').trim();
    if (label.length > MAX_LABEL_LENGTH) {
      return detail(reply, operator, csrf, licenceId, { problem: `The label has at most ${MAX_LABEL_LENGTH} characters.` }, 400);
    }
    if (maxPersons !== '' && !/^\d{1,10}$/.test(maxPersons)) {
      return detail(reply, operator, csrf, licenceId, { problem: 'Most enrolled persons: a whole number, or empty for no limit.' }, 400);
    }
    // Unchecked boxes are not sent: the grants are exactly the boxes checked.
    const patch: LicencePatch = { label, grants: fields(body, 'grant'), maxPersons: maxPersons === '' ? null : Number(maxPersons) };
    try {
      await ctx.licences.update(scopeOf(operator), licenceId, patch);
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal.status === 404) return sendPage(reply, notFoundPage({ operator, csrf }), 404);
      return detail(reply, operator, csrf, licenceId, { problem: refusal.message }, refusal.status);
    }
    return redirectTo(reply, withNotice(PATHS.licence(licenceId), 'licence-saved'));
  });

  app.get<Params>('/licences/:licenceId/revoke', async (request, reply) => {
    const operator = operatorOf(request);
    const csrf = visitorOf(request).csrf;
    let licence;
    try {
      licence = await ctx.licences.get(scopeOf(operator), request.params.licenceId);
    } catch (err) {
      if (refusalOf(err).status === 404) return sendPage(reply, notFoundPage({ operator, csrf }), 404);
      throw err;
    }
    if (licence.status === 'revoked') return redirectTo(reply, PATHS.licence(licence.licenceId));
    return sendPage(reply, revokeLicencePage({ operator, csrf, licence }));
  });

  /** A change by a LicenceService method, then back to the licence's page with its notice. */
  const change = (method: 'revoke' | 'release', notice: 'licence-revoked' | 'device-released') =>
    async (request: Parameters<typeof operatorOf>[0] & { params: { licenceId: string } }, reply: FastifyReply) => {
      const operator = operatorOf(request);
      const csrf = visitorOf(request).csrf;
      const { licenceId } = request.params;
      try {
        await ctx.licences[method](scopeOf(operator), licenceId);
      } catch (err) {
        const refusal = refusalOf(err);
        if (refusal.status === 404) return sendPage(reply, notFoundPage({ operator, csrf }), 404);
        return detail(reply, operator, csrf, licenceId, { problem: refusal.message }, refusal.status);
      }
      return redirectTo(reply, withNotice(PATHS.licence(licenceId), notice));
    };

  app.post<Params>('/licences/:licenceId/revoke', change('revoke', 'licence-revoked'));
  app.post<Params>('/licences/:licenceId/release', change('release', 'device-released'));
};

export default licenceRoutes;
