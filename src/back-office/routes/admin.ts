// Administration, for administrator accounts only (the session hook answers others with the not-found
// page): every account, and activation codes issued by the ActivationCodes service (src/licensing/), the
// code shown once after the redirect.
import type { FastifyPluginAsync } from 'fastify';
import { isPlan } from '../../domain/accounts';
import { DEFAULT_CODE_VALID_DAYS } from '../../licensing/cloud/activation-codes';
import type { BackOfficeContext } from '../context';
import { field, type FormBody } from '../form-body';
import { noticeOf, withNotice } from '../notices';
import { PATHS } from '../paths';
import { redirectTo, sendPage } from '../respond';
import { operatorOf, visitorOf } from '../session';
import { adminPage, type AdminAccountRow } from '../views/admin';

const MAX_VALID_DAYS = 3650;

const adminRoutes: FastifyPluginAsync<{ ctx: BackOfficeContext }> = async (app, { ctx }) => {
  const accountRows = async (): Promise<AdminAccountRow[]> => Promise.all((await ctx.accounts.list()).map(async (a) => ({
    ...a,
    keys: (await ctx.accounts.listKeys(a.accountId)).filter((k) => !k.revoked).length,
    licences: (await ctx.licences.list({ accountId: a.accountId })).filter((l) => l.status === 'active').length,
    persons: (await ctx.accounts.accountView(a.accountId))?.persons ?? 0,
  })));

  const render = async (request: Parameters<typeof operatorOf>[0], extra: { problem?: string; notice?: string; issued?: { code: string; plan: string; expires: string } }) => {
    const visitor = visitorOf(request);
    return adminPage({
      operator: operatorOf(request), csrf: visitor.csrf, accounts: await accountRows(), codes: await ctx.activationCodes.list(),
      defaultValidDays: DEFAULT_CODE_VALID_DAYS, ...extra,
    });
  };

  app.get('/admin', { config: { backOffice: 'administrator' } }, async (request, reply) => {
    const issued = ctx.reveals.takeActivationCode(visitorOf(request).binding);
    return sendPage(reply, await render(request, { issued, notice: noticeOf(request.query) }));
  });

  app.post('/admin/activation-codes', { config: { backOffice: 'administrator' } }, async (request, reply) => {
    const body = request.body as FormBody;
    const plan = field(body, 'plan');
    const validDaysText = field(body, 'validDays').trim();
    const validDays = /^\d{1,4}$/.test(validDaysText) ? Number(validDaysText) : NaN;
    if (!isPlan(plan)) return sendPage(reply, await render(request, { problem: 'Choose one of the plans offered.' }), 400);
    if (!(validDays >= 1 && validDays <= MAX_VALID_DAYS)) {
      return sendPage(reply, await render(request, { problem: `Valid for: a whole number of days from 1 to ${MAX_VALID_DAYS}.` }), 400);
    }
    // A registration code opens one account ([accounts] registration = activation-code); with an e-mail
    // address it is that address's invitation (registration = invitation).
    const registration = field(body, 'purpose') === 'registration';
    const email = field(body, 'email').trim();
    if (email && (!registration || !/^[^\s@]+@[^\s@]+$/.test(email))) {
      return sendPage(reply, await render(request, { problem: 'Invited e-mail address: one address like name@example.com, for a registration code only.' }), 400);
    }
    const { code, record } = await ctx.activationCodes.issue(plan, validDays, ctx.now(), registration ? (email ? { email } : {}) : undefined);
    ctx.reveals.put(visitorOf(request).binding, { activationCode: { code, plan: record.plan, expires: record.expires } });
    return redirectTo(reply, withNotice(PATHS.admin, 'code-issued'));
  });
};

export default adminRoutes;
