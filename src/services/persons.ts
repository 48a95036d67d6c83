// Person management: create, update, remove, get. LMDB is written first; the account's gallery follows
// only after the commit, so a search never sees a person the store does not hold.
import type { FaceAnalysis, RgbImage } from '../engine/types';
import { roundSimilarity } from '../matching/similarity-scale';
import { analyse, type Caller, type ServiceContext } from './context';
import { runEnrolmentChecks } from './enrolment-checks';
import { faceInputImage, type FaceInput } from './face-input';
import { detectorOf, diagnoseNoFace } from './no-face-diagnosis';
import { personView, type PersonView } from './person-view';
import { consumeQuota } from './quota';

/** Only the enrolment face is analysed; the engine still returns every face's size for the count. */
const ENROL_MAX_FACES = 1;

/** POST /person/face/{person_id}: absent -> enrolled. CP_002 when the id exists. */
export async function createPerson(ctx: ServiceContext, caller: Caller, personId: string, input: FaceInput): Promise<PersonView> {
  const image = await faceInputImage(ctx, input);
  const exists = () => ctx.errors.create('ProfileExists', undefined, { person_id: personId });
  // Cheap pre-check before the engine runs; decided again under the account's lock.
  if (ctx.store.persons.meta(caller.accountId, personId)) throw exists();
  const faces = await analyse(ctx, image.rgb, ENROL_MAX_FACES, 'enrol');
  // The engine runs outside the lock; the id check, the duplicate search and both writes run inside it, so
  // of concurrent creates of one id the first wins and the rest get CP_002, and of concurrent creates of
  // one face under several ids the first wins and the rest get F_012.
  return ctx.store.exclusive(caller.accountId, async () => {
    if (ctx.store.persons.meta(caller.accountId, personId)) throw exists();
    const face = await enrolmentFace(ctx, caller, personId, faces, false, image.rgb);
    const result = await ctx.store.persons.create(
      caller.accountId, personId,
      { modelId: ctx.engine.modelId, template: face.embedding, referenceImage: image.bytes },
      ctx.now().toISOString(),
    );
    if (!result.created) throw exists();
    await ctx.galleries.of(caller.accountId).upsert(personId, face.embedding);
    return personView(result.person);
  });
}

/** PUT /person/face/{person_id}: enrolled -> enrolled with new reference data. NF_001 when absent. */
export async function updatePerson(ctx: ServiceContext, caller: Caller, personId: string, input: FaceInput): Promise<PersonView> {
  const image = await faceInputImage(ctx, input);
  const notFound = () => ctx.errors.create('FaceNotInCollection', `person ${personId}`);
  if (!ctx.store.persons.meta(caller.accountId, personId)) throw notFound();
  const faces = await analyse(ctx, image.rgb, ENROL_MAX_FACES, 'enrol');
  return ctx.store.exclusive(caller.accountId, async () => {
    const face = await enrolmentFace(ctx, caller, personId, faces, true, image.rgb);
    const person = await ctx.store.persons.replace(
      caller.accountId, personId,
      { modelId: ctx.engine.modelId, template: face.embedding, referenceImage: image.bytes },
      ctx.now().toISOString(),
    );
    if (!person) throw notFound(); // removed while the engine ran
    await ctx.galleries.of(caller.accountId).upsert(personId, face.embedding);
    return personView(person);
  });
}

/** DELETE /person/face/{person_id}: enrolled -> absent; answers the removed person's body. */
export async function removePerson(ctx: ServiceContext, caller: Caller, personId: string): Promise<PersonView> {
  await consumeQuota(ctx, caller.accountId);
  // Under the lock, so an update finishing at the same time cannot put the template back in the gallery.
  return ctx.store.exclusive(caller.accountId, async () => {
    const removed = await ctx.store.persons.remove(caller.accountId, personId);
    if (!removed) throw ctx.errors.create('FaceNotInCollection', `person ${personId}`);
    await ctx.galleries.of(caller.accountId).remove(personId);
    return personView(removed);
  });
}

/** GET /person/face/{person_id}. */
export async function getPerson(ctx: ServiceContext, caller: Caller, personId: string): Promise<PersonView> {
  await consumeQuota(ctx, caller.accountId);
  const person = ctx.store.persons.meta(caller.accountId, personId);
  if (!person) throw ctx.errors.create('FaceNotInCollection', `person ${personId}`);
  return personView(person);
}

/** Runs the enrolment checks on the analysed faces; returns the face to enrol or throws its F_ code. */
async function enrolmentFace(
  ctx: ServiceContext, caller: Caller, personId: string, faces: FaceAnalysis[], isUpdate: boolean, rgb: RgbImage,
): Promise<FaceAnalysis> {
  const gallery = ctx.galleries.of(caller.accountId);
  const threshold = ctx.config.matching.duplicate_threshold;
  const findDuplicate = async (face: FaceAnalysis): Promise<string | undefined> => {
    // Two hits: on update the person's own template may be the best one and does not count.
    const hits = await gallery.search(face.embedding, 2, ctx.scale.toCosineFloor(threshold) - 1e-6);
    const other = hits.find((h) => !(isUpdate && h.personId === personId));
    return other && roundSimilarity(ctx.scale.toSimilarity(other.cosine)) >= threshold ? other.personId : undefined;
  };
  // No face: a dark, blurred or rolled photo gets its own code rather than F_002 (no-face-diagnosis.ts).
  const outcome = await runEnrolmentChecks(faces, ctx.config.quality, findDuplicate,
    () => diagnoseNoFace(rgb, ctx.config.quality, detectorOf(ctx.engine)));
  if (!outcome.ok) throw ctx.errors.create(outcome.error, `person ${personId}: ${outcome.reason}`);
  return outcome.face;
}
