// POST /person/verify-face/{person_id}: 1:1 match of the largest face against the person's template.
// A failed match (no face, or similarity below [matching] verify_threshold) answers 410 RF_001
// "No person matched": the 200 body has no field for a result, so 200 must mean "verified"; RF_001 is the
// spec's own code for "no person matched"; NF_001 would wrongly say the person_id is not enrolled.
import { dot } from '../matching/dot';
import { analyse, type Caller, type ServiceContext } from './context';
import { faceInputImage, type FaceInput } from './face-input';
import { releasing } from './images';
import { personView, type PersonView } from './person-view';
import { meterRequest } from './quota';

export async function verifyPerson(ctx: ServiceContext, caller: Caller, personId: string, input: FaceInput): Promise<PersonView> {
  const image = await faceInputImage(ctx, input);
  const { person, face } = await releasing(image, async () => {
    // The count and the person's meta in one statement (one round trip on PostgreSQL at most).
    const stored = await meterRequest(ctx, caller.accountId, personId);
    if (!stored) throw ctx.errors.create('FaceNotInCollection', `person ${personId}`);
    if (stored.modelId !== ctx.engine.modelId) {
      // Templates of another model are not comparable; `face-check reindex` recomputes them.
      throw ctx.errors.create('ServiceUnavailable', `person ${personId} has a ${stored.modelId} template: run reindex`);
    }
    return { person: stored, face: (await analyse(ctx, image.rgb, 'verify'))[0] };
  });
  if (!face) throw ctx.errors.create('NoPersonMatched', 'no face in the probe image');
  const threshold = ctx.config.matching.verify_threshold;
  // The account's index answers (float32 re-score of the stored copy); the store's template is the fallback
  // should the cache ever miss the person.
  const cosine = await ctx.galleries.of(caller.accountId).score(personId, face.embedding) ?? await storedCosine(ctx, caller, personId, face.embedding);
  const similarity = ctx.scale.percent(cosine);
  if (similarity < threshold) throw ctx.errors.create('NoPersonMatched', `similarity ${similarity} < ${threshold}`);
  return personView(person);
}

/** The cosine with the stored template, for a person the index does not hold (it should). */
async function storedCosine(ctx: ServiceContext, caller: Caller, personId: string, probe: Float32Array): Promise<number> {
  const stored = await ctx.store.persons.get(caller.accountId, personId);
  if (!stored) throw ctx.errors.create('FaceNotInCollection', `person ${personId}`);
  return dot(probe, stored.template);
}
