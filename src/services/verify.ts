// POST /person/verify-face/{person_id}: 1:1 match of the largest face against the person's template.
// A failed match (no face, or similarity below [matching] verify_threshold) answers 410 RF_001
// "No person matched": the 200 body has no field for a result, so 200 must mean "verified"; RF_001 is the
// spec's own code for "no person matched"; NF_001 would wrongly say the person_id is not enrolled.
import { dot } from '../matching/gallery';
import { roundSimilarity } from '../matching/similarity-scale';
import { analyse, type Caller, type ServiceContext } from './context';
import { decodeField } from './images';
import { personView, type PersonView } from './person-view';
import { consumeQuota } from './quota';

export async function verifyPerson(ctx: ServiceContext, caller: Caller, personId: string, faceImage: string): Promise<PersonView> {
  const image = await decodeField(ctx, 'faceImage', faceImage);
  await consumeQuota(ctx, caller.accountId);
  const person = ctx.store.persons.get(caller.accountId, personId);
  if (!person) throw ctx.errors.create('FaceNotInCollection', `person ${personId}`);
  if (person.modelId !== ctx.engine.modelId) {
    // Templates of another model are not comparable; `face-check reindex` recomputes them.
    throw ctx.errors.create('ServiceUnavailable', `person ${personId} has a ${person.modelId} template: run reindex`);
  }
  const [face] = await analyse(ctx, image.rgb, 1, 'match');
  if (!face) throw ctx.errors.create('NoPersonMatched', 'no face in the probe image');
  const threshold = ctx.config.matching.verify_threshold;
  const similarity = roundSimilarity(ctx.scale.toSimilarity(dot(face.embedding, person.template)));
  if (similarity < threshold) throw ctx.errors.create('NoPersonMatched', `similarity ${similarity} < ${threshold}`);
  return personView(person);
}
