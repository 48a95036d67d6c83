// Operators' accounts: the plans an account can be on and who may do what. Stored by src/storage/lmdb/accounts.ts
// and ruled by src/licensing/, so the names live below both.
export const PLANS = ['free', 'paid'] as const;
export type Plan = (typeof PLANS)[number];

export function isPlan(value: string): value is Plan {
  return (PLANS as readonly string[]).includes(value);
}

/** operator: sees and manages only its own account; administrator (made by the CLI): sees all accounts. */
export type AccountRole = 'operator' | 'administrator';

/** A signed-in operator, as the account API's routes see it. */
export interface Operator {
  accountId: string;
  email: string;
  role: AccountRole;
}
