// POST /person/recognize-face: 1:N search of the largest face over the caller's account.
// Codes: F_011 when the face is smaller than [quality] min_face_size; RF_001 when no face is found or no
// enrolled person reaches [matching] identify_threshold.
import type { DecodedImage } from '../image/decode';
import { analyse, type Caller, type ServiceContext } from './context';
import { faceInputImage, type FaceInput } from './face-input';
import { releasing } from './images';
import { personView, type PersonView } from './person-view';
import { meterRequest, refuseIfKnownExhausted } from './quota';

export async function identifyPerson(ctx: ServiceContext, caller: Caller, input: FaceInput): Promise<PersonView> {
  const image = await faceInputImage(ctx, input);
  refuseIfKnownExhausted(ctx, caller.accountId);
  // The request is counted after the search rather than before the analysis, so that the plan read, the count
  // and the match's meta are one statement (one round trip on PostgreSQL). What the caller sees is as if it
  // were counted first: every request past validation is counted, and CP_005 (not counted) takes precedence
  // over whatever the analysis or search concluded. A client past its quota is then refused before
  // the analysis for a few seconds (refuseIfKnownExhausted).
  let matched: string | undefined;
  let failure: { error: unknown } | undefined;
  try {
    matched = await search(ctx, caller, image);
  } catch (error) {
    failure = { error };
  }
  const person = await meterRequest(ctx, caller.accountId, matched);
  if (failure) throw failure.error;
  // Read after the search: a person removed meanwhile (on any node) is not returned.
  if (!person) throw ctx.errors.create('NoPersonMatched', `${matched} removed during the search`);
  return personView(person);
}

/** The best match's person_id, or throws F_011 / RF_001. */
async function search(ctx: ServiceContext, caller: Caller, image: DecodedImage): Promise<string> {
  const [face] = await releasing(image, () => analyse(ctx, image.rgb, 'identify'));
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
  return best.personId;
}
