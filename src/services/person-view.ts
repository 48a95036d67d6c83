// The Person body of every person response: personId, created, updated. Never the image or template.
import type { PersonMeta } from '../storage/records';

export interface PersonView {
  personId: string;
  created: string;
  updated: string;
}

export function personView(p: PersonMeta): PersonView {
  return { personId: p.personId, created: p.created, updated: p.updated };
}
