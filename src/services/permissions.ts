// What an API key may do. A key has one role; a role is a fixed set of permissions, checked per route.
import { isRole, type Role } from '../domain/roles';

export type Permission = 'person:read' | 'person:write' | 'person:match' | 'live:read';

const rolePermissions: Record<Role, readonly Permission[]> = {
  // Everything the API offers.
  full: ['person:read', 'person:write', 'person:match', 'live:read'],
  // Back-office enrolment: create, update, remove and look up persons; no matching.
  enrol: ['person:read', 'person:write'],
  // Gates and kiosks: identify, verify, compare, look up, live face; cannot change the gallery.
  match: ['person:read', 'person:match', 'live:read'],
};

export function roleAllows(role: string, permission: Permission): boolean {
  return isRole(role) && rolePermissions[role].includes(permission);
}
