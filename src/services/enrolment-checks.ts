// Every check an enrolment photo must pass (create and update), in one fixed order: the first failing
// check's code is the answer, so the order decides which fault a photo with several is rejected for:
//   1 F_002 no face        2 F_001 more than one face   3 F_011 face too small
//   4 F_008 roll           5 F_006 brightness           6 F_007 sharpness
//   7 F_010 yaw            8 F_009 pitch                9 F_005 sunglasses
//  10 F_003 eyes closed   11 F_004 mouth open          12 F_012 face already enrolled
// Why: every later measure needs one face of a usable size. Roll comes next: it is the angle of the eye
// line, the sturdiest landmark measure, while brightness and sharpness are taken in the crop aligned on the
// landmarks, which a strongly rolled face throws off (it then reads blurred). Image quality comes before yaw
// and pitch, which rest on finer landmarks (nose tip, face contour) that darkness, blur and a strong roll
// displace. Measured on LFW photos rolled 50° (bench:quality, docs/quality.md): 86 % got F_008 with the
// image quality first, 94 % with roll first, while 2 % of blurred ones then read as rolled. Sunglasses come
// before closed eyes because dark glasses make eyes read as closed; the duplicate search comes last because
// it is the only check that needs the gallery.
// When no face is found, an optional diagnosis (no-face-diagnosis.ts) may answer F_006, F_007 or F_008
// instead of F_002: a dark, blurred or tilted photo hides its face from the detector. When a face is found
// but a later check fails, an optional re-check (roll-recheck.ts) may answer F_008 instead: a face rolled
// past ~35 degrees reads a small roll from its landmarks and then fails for that (F_001, F_011, F_007...).
import type { FaceAnalysis } from '../engine/types';
import type { QualityConfig } from '../config/types';
import type { ErrorName } from '../errors';

export interface CheckContext {
  /** Every face the engine returned, largest first. */
  faces: readonly FaceAnalysis[];
  /** The enrolment face (the largest); checks after F_002 may rely on it. */
  face: FaceAnalysis;
  bounds: QualityConfig;
  /** Person id of an already enrolled face matching this one, else undefined (a gallery search). */
  findDuplicate(face: FaceAnalysis): Promise<string | undefined>;
}

export interface EnrolmentCheck {
  error: ErrorName;
  /** Undefined when the photo passes; otherwise a reason for the log (never sent to the client). */
  fault(ctx: CheckContext): string | undefined | Promise<string | undefined>;
}

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(2));
const above = (what: string, value: number, max: number) =>
  Math.abs(value) > max ? `${what} ${fmt(value)} beyond ±${fmt(max)}` : undefined;

/** Faces at least background_face_ratio x the largest face's size: the faces that count. */
export function countedFaces(faces: readonly FaceAnalysis[], ratio: number): FaceAnalysis[] {
  if (faces.length === 0) return [];
  const largest = Math.max(...faces.map((f) => f.faceSize));
  return faces.filter((f) => f.faceSize >= ratio * largest);
}

export const ENROLMENT_CHECKS: readonly EnrolmentCheck[] = Object.freeze([
  { error: 'NoFace', fault: (c) => (c.faces.length === 0 ? 'no face detected' : undefined) },
  {
    error: 'NotOneFace',
    fault: (c) => {
      const n = countedFaces(c.faces, c.bounds.background_face_ratio).length;
      return n > 1 ? `${n} faces of comparable size` : undefined;
    },
  },
  {
    error: 'WrongFaceSize',
    fault: (c) => (c.face.faceSize < c.bounds.min_face_size
      ? `face ${fmt(c.face.faceSize)} px, below ${fmt(c.bounds.min_face_size)} px` : undefined),
  },
  { error: 'WrongFaceRoll', fault: (c) => above('roll', c.face.pose.roll, c.bounds.max_roll) },
  {
    error: 'BadBrightness',
    fault: (c) => {
      const b = c.face.brightness;
      return b < c.bounds.min_brightness || b > c.bounds.max_brightness
        ? `brightness ${fmt(b)} outside ${fmt(c.bounds.min_brightness)}..${fmt(c.bounds.max_brightness)}` : undefined;
    },
  },
  {
    error: 'BadSharpness',
    fault: (c) => (c.face.sharpness < c.bounds.min_sharpness
      ? `sharpness ${fmt(c.face.sharpness)} below ${fmt(c.bounds.min_sharpness)}` : undefined),
  },
  { error: 'WrongFaceYaw', fault: (c) => above('yaw', c.face.pose.yaw, c.bounds.max_yaw) },
  { error: 'WrongFacePitch', fault: (c) => above('pitch', c.face.pose.pitch, c.bounds.max_pitch) },
  {
    error: 'SunglassesExist',
    fault: (c) => (c.face.sunglasses > c.bounds.max_sunglasses
      ? `sunglasses ${fmt(c.face.sunglasses)} above ${fmt(c.bounds.max_sunglasses)}` : undefined),
  },
  {
    // The mean openness of both eyes: closed eyes read ~0 on both, while one eye misread (hair, glare,
    // a turned head) must not reject an open-eyed photo (bench:quality: good photos' mean >= 0.51).
    error: 'EyesClosed',
    fault: (c) => {
      const e = (c.face.eyes.left + c.face.eyes.right) / 2;
      return e < c.bounds.min_eye_openness ? `mean eye openness ${fmt(e)} below ${fmt(c.bounds.min_eye_openness)}` : undefined;
    },
  },
  {
    error: 'MouthOpen',
    fault: (c) => (c.face.mouthOpenness > c.bounds.max_mouth_openness
      ? `mouth openness ${fmt(c.face.mouthOpenness)} above ${fmt(c.bounds.max_mouth_openness)}` : undefined),
  },
  {
    error: 'FaceExists',
    fault: async (c) => {
      const other = await c.findDuplicate(c.face);
      return other !== undefined ? `matches enrolled person ${other}` : undefined;
    },
  },
] satisfies EnrolmentCheck[]);

export type CheckOutcome = { ok: true; face: FaceAnalysis } | { ok: false; error: ErrorName; reason: string };

/** The code (and log reason) for a photo without a detected face; runs only when F_002 would answer. */
export type NoFaceDiagnoser = () => Promise<{ error: ErrorName; reason: string }>;

/** Runs only when a check of ROLL_SENSITIVE fails with `error`: F_008 (and its reason) when the face turns out to
 *  be rolled beyond what its landmarks read (roll-recheck.ts), else undefined and the code stands. */
export type RollRechecker = (error: ErrorName, face: FaceAnalysis) => Promise<{ error: ErrorName; reason: string } | undefined>;

/** The codes a strong roll can cause through misplaced landmarks or boxes: every photo check but F_002,
 *  F_008 itself and the gallery's F_012. The roll re-check runs for these only. */
export const ROLL_SENSITIVE: ReadonlySet<ErrorName> = new Set<ErrorName>([
  'NotOneFace', 'WrongFaceSize', 'BadBrightness', 'BadSharpness', 'WrongFaceYaw', 'WrongFacePitch',
  'SunglassesExist', 'EyesClosed', 'MouthOpen',
]);

export interface Diagnosers {
  noFace?: NoFaceDiagnoser;
  roll?: RollRechecker;
}

/** Runs the checks in order, stopping at the first fault; faces must be sorted largest first. */
export async function runEnrolmentChecks(
  faces: readonly FaceAnalysis[],
  bounds: QualityConfig,
  findDuplicate: (face: FaceAnalysis) => Promise<string | undefined>,
  diagnose?: NoFaceDiagnoser | Diagnosers,
  checks: readonly EnrolmentCheck[] = ENROLMENT_CHECKS,
): Promise<CheckOutcome> {
  const { noFace, roll }: Diagnosers = typeof diagnose === 'function' ? { noFace: diagnose } : diagnose ?? {};
  const ctx: CheckContext = { faces, face: faces[0], bounds, findDuplicate };
  for (const check of checks) {
    const reason = await check.fault(ctx);
    if (reason === undefined) continue;
    if (check.error === 'NoFace' && noFace) {
      const d = await noFace();
      return { ok: false, error: d.error, reason: d.reason };
    }
    if (roll && ROLL_SENSITIVE.has(check.error)) {
      const r = await roll(check.error, ctx.face);
      if (r) return { ok: false, error: r.error, reason: `${reason}; ${r.reason}` };
    }
    return { ok: false, error: check.error, reason };
  }
  return { ok: true, face: faces[0] };
}
