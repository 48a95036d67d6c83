// Usage of the last 30 days: per API key (the service's own count, src/storage/key-usage-counter.ts) and per licence
// (what its device reported, LicenceService.usage), with the plan's quota and the number of enrolled persons.
import type { FastifyPluginAsync } from 'fastify';
import type { BackOfficeContext } from '../context';
import { sendPage } from '../respond';
import { operatorOf, visitorOf } from '../session';
import { everyDay, lastDays } from '../usage-chart';
import { usagePage } from '../views/usage';

const USAGE_DAYS = 30;

const usageRoutes: FastifyPluginAsync<{ ctx: BackOfficeContext }> = async (app, { ctx }) => {
  app.get('/usage', async (request, reply) => {
    const operator = operatorOf(request);
    const account = await ctx.accounts.accountView(operator.accountId);
    if (!account) throw new Error('signed-in account without its record');
    const days = lastDays(ctx.now(), USAGE_DAYS);
    const keys = await Promise.all((await ctx.accounts.listKeys(operator.accountId)).map(async (k) => ({
      id: k.keyId,
      name: `${k.label || '(no label)'} (${k.keyId}${k.revoked ? ', revoked' : ''})`,
      days: everyDay(days, await ctx.keyUsage.range(k.keyId, days[0], days[days.length - 1])),
    })));
    const scope = { accountId: operator.accountId };
    const licences = await Promise.all((await ctx.licences.list(scope)).map(async (l) => ({
      id: l.licenceId,
      name: `${l.label || '(no label)'} (${l.licenceId}${l.status === 'revoked' ? ', revoked' : ''})`,
      days: (await ctx.licences.usage(scope, l.licenceId, USAGE_DAYS)).days.map((d) => ({ day: d.day, requests: d.total })),
    })));
    return sendPage(reply, usagePage({ operator, csrf: visitorOf(request).csrf, account, keys, licences }));
  });
};

export default usageRoutes;
