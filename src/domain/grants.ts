// What a device licence may allow: one grant per device operation (spec section 1, step 5: "Which requests
// the device may fulfil depends on the grants"). The table of grants to requests is the README's.
export const GRANTS = ['live-face', 'create', 'update', 'remove', 'get', 'identify', 'verify', 'compare'] as const;
export type Grant = (typeof GRANTS)[number];

/** The request each grant admits (method and path as routed), for the README table and the device's gate. */
export const GRANT_REQUESTS: Readonly<Record<Grant, { method: string; url: string; operation: string }>> = {
  'live-face': { method: 'GET', url: '/person/face/', operation: 'Get face image' },
  create: { method: 'POST', url: '/person/face/:person_id', operation: 'Create person' },
  update: { method: 'PUT', url: '/person/face/:person_id', operation: 'Update person' },
  remove: { method: 'DELETE', url: '/person/face/:person_id', operation: 'Remove person' },
  get: { method: 'GET', url: '/person/face/:person_id', operation: 'Get person by id' },
  identify: { method: 'POST', url: '/person/recognize-face', operation: 'Identify person' },
  verify: { method: 'POST', url: '/person/verify-face/:person_id', operation: 'Verify person' },
  compare: { method: 'POST', url: '/person/compare-face', operation: 'Compare person' },
};

export function isGrant(value: string): value is Grant {
  return (GRANTS as readonly string[]).includes(value);
}

/** The grant a routed request needs (method + fastify route url), or undefined for routes outside the person API. */
export function grantOf(method: string, routeUrl: string): Grant | undefined {
  for (const grant of GRANTS) {
    const r = GRANT_REQUESTS[grant];
    if (r.method === method && r.url === routeUrl) return grant;
  }
  return undefined;
}

/**
 * Grants from a list ("identify,verify" or an array): known names only, no repeats, in the table's order.
 * Throws with the offending name. An empty list is allowed (a licence that allows nothing, e.g. while set up).
 */
export function parseGrants(input: string | readonly string[]): Grant[] {
  const names = typeof input === 'string' ? input.split(',').map((s) => s.trim()).filter(Boolean) : [...input];
  const seen = new Set<string>();
  for (const name of names) {
    if (!isGrant(name)) throw new Error(`unknown grant "${name}" (known: ${GRANTS.join(', ')})`);
    if (seen.has(name)) throw new Error(`grant "${name}" given twice`);
    seen.add(name);
  }
  return GRANTS.filter((g) => seen.has(g));
}

/** Limits a licence may carry beside its grants; null = none. */
export interface LicenceLimits {
  /** Most persons the device may hold enrolled (all accounts of the device together). */
  maxPersons: number | null;
}
