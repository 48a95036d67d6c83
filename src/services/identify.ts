// POST /person/recognize-face: 1:N search of the largest face over the caller's account.
// Codes: F_011 when the face is smaller than [quality] min_face_size; RF_001 when no face is found or no
// enrolled person reaches [matching] identify_threshold.
import { analyse, type Caller, type ServiceContext } from './context';
import { faceInputImage, type FaceInput } from './face-input';
import { releasing } from './images';
import { personView, type PersonView } from './person-view';
import { consumeQuota } from './quota';

export async function identifyPerson(ctx: ServiceContext, caller: Caller, input: FaceInput): Promise<PersonView> {
  const image = await faceInputImage(ctx, input);
  const [face] = await releasing(image, async () => {
    await consumeQuota(ctx, caller.accountId);
    return analyse(ctx, image.rgb, 1, 'match');
  });
  if (!face) throw ctx.errors.create('NoPersonMatched', 'no face in the probe image');
  const minSize = ctx.config.quality.min_face_size;
  if (face.faceSize < minSize) throw ctx.errors.create('WrongFaceSize', `face ${face.faceSize} px < ${minSize} px`);

  const threshold = ctx.config.matching.identify_threshold;
  const gallery = ctx.galleries.of(caller.accountId);
  // The cosine floor prunes the search; the decision itself is made on the shown (rounded) percent.
  const [best] = await gallery.search(face.embedding, 1, ctx.scale.cosineFloor(threshold));
  const similarity = best ? ctx.scale.percent(best.cosine) : 0;
  if (!best || similarity < threshold) {
    throw ctx.errors.create('NoPersonMatched', `best similarity ${similarity} < ${threshold}`);
  }
  const person = await ctx.store.persons.meta(caller.accountId, best.personId);
  if (!person) throw ctx.errors.create('NoPersonMatched', `${best.personId} removed during the search`);
  return personView(person);
}
