// The roles an API key can have. Stored with every key record (src/storage) and checked per route
// (src/services/permissions.ts), so the names live below both.
export const ROLES = ['full', 'enrol', 'match'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}
