// The request quota (CP_005): [quota] requests_per_day metered requests per account and UTC day.
// Metered are the operations whose spec error list has CP_005: remove, get, identify, verify, compare.
// A request is counted once it has passed authentication and validation (R_002/R_003 do not count), and
// a request refused with CP_005 is not counted.
// An operator's account (one with an AccountRecord, cloud) gets its plan's [plans] *_requests_per_day instead;
// accounts without a record (keys made by `face-check keys create --account`, the bootstrap key) keep [quota].
import type { Config } from '../config/types';
import type { AccountRecord, PersonMeta } from '../storage/records';
import { limitOfPlan, type MeterRequest, type PlanLimits } from '../storage/interfaces';
import type { ServiceContext } from './context';

export function utcDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** Metered requests per UTC day the account may make; 0 = unlimited. */
export function requestsPerDayOf(config: Config, account: AccountRecord | undefined): number {
  return limitOfPlan(planLimits(config), account?.plan);
}

/** The configured limits by kind of account, for the store to pick from by the plan it reads. */
export function planLimits(config: Config): PlanLimits {
  return { noRecord: config.quota.requests_per_day, free: config.plans.free_requests_per_day, paid: config.plans.paid_requests_per_day };
}

/**
 * Counts the request against the account's plan as stored now (CP_005 when the limit is reached) and, when
 * `personId` is given, returns that person's meta read after the count: one round trip on PostgreSQL at most.
 */
export async function meterRequest(ctx: ServiceContext, accountId: string, personId?: string):
  Promise<(PersonMeta & { modelId: string }) | undefined> {
  const day = utcDay(ctx.now());
  const request: MeterRequest = { accountId, day, limits: planLimits(ctx.config) };
  if (personId !== undefined) request.personId = personId;
  const { limit, admitted, person } = await ctx.store.quota.meter(request);
  if (!admitted) {
    exhaustedOf(ctx).set(accountId, { day, limit, until: ctx.now().getTime() + EXHAUSTED_MEMO_MS });
    throw ctx.errors.create('QuotaExceeded', `account ${accountId}: ${limit} requests per day used`);
  }
  return person;
}

/**
 * How long a node answers CP_005 from memory after the store refused an account's request. Identify and verify
 * count after their analysis (one round trip); without this, a client past its quota would still have every
 * face analysed. A plan raised meanwhile takes effect on this node within this bound.
 */
export const EXHAUSTED_MEMO_MS = 5_000;

const exhaustedByContext = new WeakMap<ServiceContext, Map<string, { day: string; limit: number; until: number }>>();

function exhaustedOf(ctx: ServiceContext): Map<string, { day: string; limit: number; until: number }> {
  let memo = exhaustedByContext.get(ctx);
  if (!memo) exhaustedByContext.set(ctx, (memo = new Map()));
  return memo;
}

/** CP_005 before any analysis when the store refused this account today less than EXHAUSTED_MEMO_MS ago (not counted). */
export function refuseIfKnownExhausted(ctx: ServiceContext, accountId: string): void {
  const memo = exhaustedOf(ctx);
  const known = memo.get(accountId);
  if (!known) return;
  const now = ctx.now();
  if (known.day !== utcDay(now) || now.getTime() >= known.until) {
    memo.delete(accountId);
    return;
  }
  throw ctx.errors.create('QuotaExceeded', `account ${accountId}: ${known.limit} requests per day used`);
}

export async function consumeQuota(ctx: ServiceContext, accountId: string): Promise<void> {
  await meterRequest(ctx, accountId);
}
