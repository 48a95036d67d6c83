// A face found, but rolled further than its landmarks read. The landmark model works on an upright crop of
// the detector's box: past about 35 degrees of roll it reads a roll it was trained on instead (a face-api
// crop rolled 50 degrees reads 7-20 degrees, some with the wrong sign), so F_008 does not fire, the aligned
// crop is misaligned (it reads blurred: F_007), the box shrinks (F_011) or the detector puts a second box on
// the same face (F_001). The detector has no keypoints of its own (its 5 points are the landmarks'), so the
// only robust roll is one read on a copy turned back towards upright. So when a photo with a face fails a
// later check, before answering that code:
//   1 detect on copies turned -STEP and +STEP degrees; the same face (its 5 points mapped back into the
//     failing face's box: not a neighbour in a group photo) gives a candidate roll in the photo (its roll
//     on the copy minus the turn), the copy where the face reads most upright first;
//   2 a candidate beyond max_roll is believed only if a copy turned back by it reads the face level (within
//     LEVEL degrees) and well exposed and sharp (the [quality] face bounds): the landmarks are accurate
//     there; the roll is then the turn plus that residual;
//   3 a believed roll beyond max_roll answers F_008; otherwise the original code stands.
// At most four detector runs (box, landmarks, pose; no embedding) on a copy of at most 640 px, and only
// for enrolment photos that would be refused anyway. An upright face reads its own roll on the copies (no
// copy of an upright face-api crop read beyond 16 degrees; bench:quality, docs/quality.md): code unchanged.
import type { QualityConfig } from '../config/types';
import type { FaceAnalysis, RgbImage } from '../engine/types';
import type { ErrorName } from '../errors';
import { ROLL_SENSITIVE } from './enrolment-checks';
import { fmt, normaliseAngle, rotatedCopies, type Detect, type TurnedCopy } from './no-face-diagnosis';

export { ROLL_SENSITIVE };

/** The turns of step 1: a 50 degree face reads 20 on one of them, where the landmarks are accurate. */
export const STEP = 30;
/** A copy turned back by the candidate must read the face within this many degrees of level. */
export const LEVEL = 10;

export interface RollRecheck {
  /** F_008 when the face is rolled beyond max_roll, else undefined (the original code stands). */
  error?: ErrorName;
  reason: string;
  /** The roll believed (degrees, clockwise), when a candidate was confirmed. */
  roll?: number;
  /** Detector runs spent. */
  runs: number;
}

const imageQualityOk = (f: FaceAnalysis, b: QualityConfig) =>
  f.brightness >= b.min_brightness && f.brightness <= b.max_brightness && f.sharpness >= b.min_sharpness;

/** The copy's face that is the photo's `face`: its 5 points, mapped back, inside the face's box (grown by
 *  a quarter of its side each way; a rolled face's upright box may cut its corners). Largest first. */
function sameFace(faces: FaceAnalysis[], copy: TurnedCopy, face: FaceAnalysis): FaceAnalysis | undefined {
  const b = face.box, m = b.width / 4;
  return faces.find((f) => f.points5.length === 5 && f.points5.every((q) => {
    const p = copy.toPhoto(q);
    return p.x >= b.x - m && p.x <= b.x + b.width + m && p.y >= b.y - m && p.y <= b.y + b.height + m;
  }));
}

/** `face`: the photo's face that failed a check; only that face's roll, read on the copies, counts. */
export async function recheckRoll(img: RgbImage, face: FaceAnalysis, bounds: QualityConfig, detect: Detect): Promise<RollRecheck> {
  const rotate = await rotatedCopies(img);
  let runs = 0;
  const find = async (turn: number) => {
    runs++;
    const copy = await rotate(turn);
    return sameFace(await detect(copy), copy, face);
  };
  const candidates: { turn: number; onCopy: number; roll: number }[] = [];
  for (const turn of [-STEP, STEP]) {
    const f = await find(turn);
    if (f) candidates.push({ turn, onCopy: f.pose.roll, roll: normaliseAngle(f.pose.roll - turn) });
  }
  candidates.sort((a, b) => Math.abs(a.onCopy) - Math.abs(b.onCopy));
  const seen = candidates.map((c) => `${fmt(c.roll)} (turned ${c.turn}°)`).join(', ') || 'none';
  for (const c of candidates) {
    if (Math.abs(c.roll) <= bounds.max_roll) continue;
    const back = normaliseAngle(-Math.round(c.roll));
    const level = await find(back);
    if (!level || Math.abs(level.pose.roll) > LEVEL) continue;
    // The landmarks of a dark or blurred face are unreliable at any roll (a blurred upright face once
    // confirmed a misread candidate): only a face that is well exposed and sharp once upright is believed.
    if (!level.analyzed || !imageQualityOk(level, bounds)) continue;
    const roll = normaliseAngle(level.pose.roll - back);
    if (Math.abs(roll) <= bounds.max_roll) continue;
    return {
      error: 'WrongFaceRoll', roll, runs,
      reason: `roll ${fmt(roll)} beyond ±${fmt(bounds.max_roll)}, read on a copy turned ${back}° (level within ${fmt(level.pose.roll)}°; candidates ${seen})`,
    };
  }
  return { reason: `no roll beyond ±${fmt(bounds.max_roll)} confirmed on turned copies (candidates ${seen})`, runs };
}

/** The re-check as runEnrolmentChecks takes it: only for the codes a strong roll can cause. */
export function rollRechecker(img: RgbImage, bounds: QualityConfig, detect: Detect) {
  return async (error: ErrorName, face: FaceAnalysis) => {
    if (!ROLL_SENSITIVE.has(error)) return undefined;
    const r = await recheckRoll(img, face, bounds, detect);
    return r.error ? { error: r.error, reason: r.reason } : undefined;
  };
}
