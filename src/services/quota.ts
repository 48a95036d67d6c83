// The request quota (CP_005): [quota] requests_per_day metered requests per account and UTC day.
// Metered are the operations whose spec error list has CP_005: remove, get, identify, verify, compare.
// A request is counted once it has passed authentication and validation (R_002/R_003 do not count), and
// a request refused with CP_005 is not counted.
import type { ServiceContext } from './context';

export function utcDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

export async function consumeQuota(ctx: ServiceContext, accountId: string): Promise<void> {
  const limit = ctx.config.quota.requests_per_day;
  if (limit === 0) return; // unlimited: no counter writes
  const ok = await ctx.store.quota.tryConsume(accountId, utcDay(ctx.now()), limit);
  if (!ok) throw ctx.errors.create('QuotaExceeded', `account ${accountId}: ${limit} requests per day used`);
}
