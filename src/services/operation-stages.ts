// Which engine stages each operation runs: the one place that decides it. An operation runs a stage only
// when one of the codes it may answer (the spec's error table) or its result depends on it:
//   identify   F_011 is the face box's size; the match needs the template. No image-quality code, so no
//              quality measures; no eye-state or colour-liveness model (a faceKey is a capture the camera
//              already checked for liveness; a sent photo is matched as it is, as the spec has it).
//   verify,    no face code at all: the template of the largest face.
//   compare
//   create,    the enrolment checks (enrolment-checks.ts): face size and count from the boxes, roll, yaw and
//   update     pitch from the landmarks, F_004-F_007 from the quality measures, F_003 from the eye model;
//              F_012 and the stored template need the template.
//   reindex    the template of the stored reference photo.
//   re-detect  the enrolment diagnoses' detector runs on turned copies (no-face-diagnosis.ts,
//              roll-recheck.ts): the roll of every face found (the photo's face need not be the largest on a
//              copy) and the brightness and sharpness of the one analysed; no template.
// Detection and the analysed face's landmarks (with the pose read from them) run for every operation:
// every answer starts from the face's box and its alignment points. Only the largest face is analysed; the
// others are counted by their boxes (F_001).
import type { AnalyzeOptions } from '../engine/types';

/** A stage an operation may ask for beyond detection and the analysed face's landmarks. */
export type Stage = 'quality' | 'eyes' | 'liveness' | 'embed' | 'otherFaceLandmarks';

export type Operation = 'identify' | 'verify' | 'compare' | 'create' | 'update' | 'reindex' | 're-detect';

const MATCH: readonly Stage[] = ['embed'];
const ENROL: readonly Stage[] = ['quality', 'eyes', 'embed'];

export const OPERATION_STAGES: Readonly<Record<Operation, readonly Stage[]>> = Object.freeze({
  identify: MATCH,
  verify: MATCH,
  compare: MATCH,
  create: ENROL,
  update: ENROL,
  reindex: MATCH,
  're-detect': ['quality', 'otherFaceLandmarks'],
});

/** Every stage: what the engine runs when asked for nothing in particular (benchmarks compare with it). */
export const ALL_STAGES: readonly Stage[] = Object.freeze(['quality', 'eyes', 'liveness', 'embed', 'otherFaceLandmarks']);

/** Faces analysed per image: every operation works on the largest face. */
export const ANALYSED_FACES = 1;

/** The engine options that run exactly `stages` on the largest face. */
export function stageOptions(stages: readonly Stage[]): AnalyzeOptions {
  const has = (s: Stage) => stages.includes(s);
  return {
    maxFaces: ANALYSED_FACES,
    embed: has('embed'), quality: has('quality'), eyes: has('eyes'), liveness: has('liveness'),
    otherFaceLandmarks: has('otherFaceLandmarks'),
  };
}

/** The engine options of `operation`. */
export function operationOptions(operation: Operation): AnalyzeOptions {
  return stageOptions(OPERATION_STAGES[operation]);
}
