// Person management: create, update, remove, get. The store is written first; the account's gallery follows
// through the gallery feed (either backend's change log), so a search never sees a person the store does not hold.
import type { FaceAnalysis, RgbImage } from '../engine/types';
import type { AccountScope } from '../storage/interfaces';
import { analyse, type Caller, type ServiceContext } from './context';
import { ENROLMENT_CHECKS, runEnrolmentChecks } from './enrolment-checks';
import { faceInputImage, type FaceInput } from './face-input';
import { releasing } from './images';
import { detectorOf, diagnoseNoFace } from './no-face-diagnosis';
import { personView, type PersonView } from './person-view';
import { rollRechecker } from './roll-recheck';
import { consumeQuota } from './quota';

/** The lock name of device-wide rules; an account id can never be it (it holds a NUL). */
const DEVICE_WIDE_LOCK = '\u0000device';

/** The checks of the photo itself: all but the duplicate search, which needs the gallery and the lock. */
const PHOTO_CHECKS = ENROLMENT_CHECKS.filter((c) => c.error !== 'FaceExists');

/** POST /person/face/{person_id}: absent -> enrolled. CP_002 when the id exists. */
export async function createPerson(ctx: ServiceContext, caller: Caller, personId: string, input: FaceInput): Promise<PersonView> {
  const image = await faceInputImage(ctx, input);
  const exists = () => ctx.errors.create('ProfileExists', undefined, { person_id: personId });
  // Cheap pre-check before the engine runs; decided again under the account's lock.
  const face = await releasing(image, async () => {
    if (await ctx.store.persons.meta(caller.accountId, personId)) throw exists();
    return checkedFace(ctx, personId, image.rgb, 'create');
  });
  // The engine and the photo checks run outside the lock; the id check, the duplicate search and both
  // writes run inside it, so of concurrent creates of one id the first wins and the rest get CP_002, and of
  // concurrent creates of one face under several ids the first wins and the rest get F_012.
  const enrol = () => exclusiveWrite(ctx, caller.accountId, async (persons) => {
    if (await persons.meta(caller.accountId, personId)) throw exists();
    const maxPersons = ctx.limits?.()?.maxPersons;
    if (maxPersons != null && await persons.count() >= maxPersons) {
      throw ctx.errors.explain('Forbidden', `licence allows at most ${maxPersons} enrolled persons`);
    }
    await refuseDuplicate(ctx, caller, personId, face, false);
    const result = await persons.create(
      caller.accountId, personId,
      { modelId: ctx.engine.modelId, template: face.embedding, referenceImage: image.bytes },
      ctx.now().toISOString(),
    );
    if (!result.created) throw exists();
    return personView(result.person);
  });
  // A licence's person limit counts every account's persons: while one is set, creates of all accounts take
  // turns, so two accounts enrolling at once cannot both pass at one below the limit.
  return ctx.limits?.()?.maxPersons != null ? ctx.store.exclusive(DEVICE_WIDE_LOCK, enrol) : enrol();
}

/** PUT /person/face/{person_id}: enrolled -> enrolled with new reference data. NF_001 when absent. */
export async function updatePerson(ctx: ServiceContext, caller: Caller, personId: string, input: FaceInput): Promise<PersonView> {
  const image = await faceInputImage(ctx, input);
  const notFound = () => ctx.errors.create('FaceNotInCollection', `person ${personId}`);
  const face = await releasing(image, async () => {
    if (!await ctx.store.persons.meta(caller.accountId, personId)) throw notFound();
    return checkedFace(ctx, personId, image.rgb, 'update');
  });
  return exclusiveWrite(ctx, caller.accountId, async (persons) => {
    await refuseDuplicate(ctx, caller, personId, face, true);
    const person = await persons.replace(
      caller.accountId, personId,
      { modelId: ctx.engine.modelId, template: face.embedding, referenceImage: image.bytes },
      ctx.now().toISOString(),
    );
    if (!person) throw notFound(); // removed while the engine ran
    return personView(person);
  });
}

/** DELETE /person/face/{person_id}: enrolled -> absent; answers the removed person's body. */
export async function removePerson(ctx: ServiceContext, caller: Caller, personId: string): Promise<PersonView> {
  await consumeQuota(ctx, caller.accountId);
  // Under the lock, so an update finishing at the same time cannot put the template back in the gallery.
  return exclusiveWrite(ctx, caller.accountId, async (persons) => {
    const removed = await persons.remove(caller.accountId, personId);
    if (!removed) throw ctx.errors.create('FaceNotInCollection', `person ${personId}`);
    return personView(removed);
  });
}

/**
 * The account's exclusive section for a person write. The galleries are the gallery feed's alone: the
 * section first waits until they hold every change committed before the lock (so the duplicate search sees
 * other nodes' enrolments), and the answer waits until they hold this write, which commits when the section
 * ends (a failed commit then leaves no phantom in a gallery): until its own change where the backend names
 * it (PostgreSQL), else every change committed so far. The committed change is offered to the feed, which
 * applies it at once when it was the log's next (so the next section's fence wait needs no database read).
 */
async function exclusiveWrite<T>(ctx: ServiceContext, accountId: string, write: (persons: AccountScope['persons']) => Promise<T>): Promise<T> {
  const feed = ctx.galleryFeed;
  let written: AccountScope['written'] | undefined;
  const result = await ctx.store.exclusive(accountId, async (scope) => {
    written = scope.written;
    await feed.reach(scope.fence.seq);
    return write(scope.persons);
  });
  if (written?.own) feed.offer?.(written.own);
  await (written && written.seq > 0 ? feed.reach(written.seq) : feed.catchUp());
  return result;
}

/** GET /person/face/{person_id}. */
export async function getPerson(ctx: ServiceContext, caller: Caller, personId: string): Promise<PersonView> {
  await consumeQuota(ctx, caller.accountId);
  const person = await ctx.store.persons.meta(caller.accountId, personId);
  if (!person) throw ctx.errors.create('FaceNotInCollection', `person ${personId}`);
  return personView(person);
}

/** Runs the engine and every enrolment check but the duplicate search; returns the face or throws its F_ code. */
async function checkedFace(ctx: ServiceContext, personId: string, rgb: RgbImage, operation: 'create' | 'update'): Promise<FaceAnalysis> {
  const faces = await analyse(ctx, rgb, operation);
  // No face: a dark, blurred or rolled photo gets its own code rather than F_002 (no-face-diagnosis.ts).
  // A face failing a later check may be rolled further than its landmarks read: F_008 (roll-recheck.ts).
  const outcome = await runEnrolmentChecks(faces, ctx.config.quality, async () => undefined, {
    noFace: () => diagnoseNoFace(rgb, ctx.config.quality, detectorOf(ctx.engine)),
    roll: rollRechecker(rgb, ctx.config.quality, detectorOf(ctx.engine)),
  }, PHOTO_CHECKS);
  if (!outcome.ok) throw ctx.errors.create(outcome.error, `person ${personId}: ${outcome.reason}`);
  return outcome.face;
}

/** The last check, F_012, under the account's lock: the face must not match another enrolled person. */
async function refuseDuplicate(ctx: ServiceContext, caller: Caller, personId: string, face: FaceAnalysis, isUpdate: boolean): Promise<void> {
  const threshold = ctx.config.matching.duplicate_threshold;
  // Two hits: on update the person's own template may be the best one and does not count.
  const hits = await ctx.galleries.of(caller.accountId).search(face.embedding, 2, ctx.scale.cosineFloor(threshold));
  const other = hits.find((h) => !(isUpdate && h.personId === personId));
  if (other && ctx.scale.percent(other.cosine) >= threshold) {
    throw ctx.errors.create('FaceExists', `person ${personId}: matches enrolled person ${other.personId}`);
  }
}
