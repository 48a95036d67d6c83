// The request quota (CP_005): [quota] requests_per_day metered requests per account and UTC day.
// Metered are the operations whose spec error list has CP_005: remove, get, identify, verify, compare.
// A request is counted once it has passed authentication and validation (R_002/R_003 do not count), and
// a request refused with CP_005 is not counted.
// An operator's account (one with an AccountRecord, cloud) gets its plan's [plans] *_requests_per_day instead;
// accounts without a record (keys made by `face-check keys create --account`, the bootstrap key) keep [quota].
import type { Config } from '../config/types';
import type { AccountRecord } from '../storage/accounts';
import type { ServiceContext } from './context';

export function utcDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** Metered requests per UTC day the account may make; 0 = unlimited. */
export function requestsPerDayOf(config: Config, account: AccountRecord | undefined): number {
  if (!account) return config.quota.requests_per_day;
  return account.plan === 'paid' ? config.plans.paid_requests_per_day : config.plans.free_requests_per_day;
}

export async function consumeQuota(ctx: ServiceContext, accountId: string): Promise<void> {
  const limit = requestsPerDayOf(ctx.config, await ctx.store.accounts.get(accountId));
  if (limit === 0) return; // unlimited: no counter writes
  const ok = await ctx.store.quota.tryConsume(accountId, utcDay(ctx.now()), limit);
  if (!ok) throw ctx.errors.create('QuotaExceeded', `account ${accountId}: ${limit} requests per day used`);
}
