// The request quota (CP_005): [quota] requests_per_day metered requests per account and UTC day.
// Metered are the operations whose spec error list has CP_005: remove, get, identify, verify, compare.
// A request is counted once it has passed authentication and validation (R_002/R_003 do not count), and
// a request refused with CP_005 is not counted.
// An operator's account (one with an AccountRecord, cloud) gets its plan's [plans] *_requests_per_day instead;
// accounts without a record (keys made by `face-check keys create --account`, the bootstrap key) keep [quota].
import type { Config } from '../config/types';
import type { AccountRecord } from '../storage/accounts';
import type { PersonMeta } from '../storage/persons';
import type { MeterRequest, PlanLimits } from '../storage/postgres/interfaces';
import type { ServiceContext } from './context';

export function utcDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** Metered requests per UTC day the account may make; 0 = unlimited. */
export function requestsPerDayOf(config: Config, account: AccountRecord | undefined): number {
  if (!account) return config.quota.requests_per_day;
  return account.plan === 'paid' ? config.plans.paid_requests_per_day : config.plans.free_requests_per_day;
}

/** The configured limits by kind of account, for the store to pick from by the plan it reads. */
export function planLimits(config: Config): PlanLimits {
  return { noRecord: config.quota.requests_per_day, free: config.plans.free_requests_per_day, paid: config.plans.paid_requests_per_day };
}

/**
 * Counts the request against the account's plan as stored now (CP_005 when the limit is reached) and, when
 * `personId` is given, returns that person's meta read after the count: one round trip on PostgreSQL.
 */
export async function meterRequest(ctx: ServiceContext, accountId: string, personId?: string):
  Promise<(PersonMeta & { modelId: string }) | undefined> {
  const request: MeterRequest = { accountId, day: utcDay(ctx.now()), limits: planLimits(ctx.config) };
  if (personId !== undefined) request.personId = personId;
  const { limit, admitted, person } = await ctx.store.quota.meter(request);
  if (!admitted) throw ctx.errors.create('QuotaExceeded', `account ${accountId}: ${limit} requests per day used`);
  return person;
}

export async function consumeQuota(ctx: ServiceContext, accountId: string): Promise<void> {
  await meterRequest(ctx, accountId);
}
