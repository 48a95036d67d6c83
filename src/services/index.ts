// The service operations, bound to one context: what the HTTP routes call.
import type { Caller, ServiceContext } from './context';
import { comparePersons, type CompareInput, type CompareResult } from './compare';
import type { FaceInput } from './face-input';
import { identifyPerson } from './identify';
import type { LiveFace, LiveFaceSource } from '../device/live-face-source';
import { getLiveFace } from './live-face';
import { createPerson, getPerson, removePerson, updatePerson } from './persons';
import type { PersonView } from './person-view';
import { verifyPerson } from './verify';

export interface Services {
  readonly context: ServiceContext;
  createPerson(caller: Caller, personId: string, face: FaceInput): Promise<PersonView>;
  updatePerson(caller: Caller, personId: string, face: FaceInput): Promise<PersonView>;
  removePerson(caller: Caller, personId: string): Promise<PersonView>;
  getPerson(caller: Caller, personId: string): Promise<PersonView>;
  identifyPerson(caller: Caller, face: FaceInput): Promise<PersonView>;
  verifyPerson(caller: Caller, personId: string, face: FaceInput): Promise<PersonView>;
  comparePersons(caller: Caller, input: CompareInput): Promise<CompareResult>;
  getLiveFace(): Promise<LiveFace>;
}

export function createServices(base: ServiceContext, camera?: LiveFaceSource): Services {
  const ctx: ServiceContext = { ...base, camera };
  return {
    context: ctx,
    createPerson: (c, id, img) => createPerson(ctx, c, id, img),
    updatePerson: (c, id, img) => updatePerson(ctx, c, id, img),
    removePerson: (c, id) => removePerson(ctx, c, id),
    getPerson: (c, id) => getPerson(ctx, c, id),
    identifyPerson: (c, img) => identifyPerson(ctx, c, img),
    verifyPerson: (c, id, img) => verifyPerson(ctx, c, id, img),
    comparePersons: (c, input) => comparePersons(ctx, c, input),
    getLiveFace: () => getLiveFace(ctx),
  };
}

export type { Caller, ServiceContext } from './context';
export type { PersonView } from './person-view';
export type { LiveFace, LiveFaceSource } from '../device/live-face-source';
export type { FaceInput } from './face-input';
