// What every service operation works with. Routes hold none of this: they call services, which call the
// engine, the galleries and the store.
import type { Config } from '../config/types';
import type { FaceEngine, FaceAnalysis, RgbImage } from '../engine/types';
import type { ErrorCatalog } from '../errors';
import type { PixelBudget } from '../image/pixel-budget';
import type { Galleries } from '../matching/galleries';
import type { SimilarityScale } from '../matching/similarity-scale';
import type { Store } from '../storage/store';
import type { LiveFaceSource } from '../device/live-face-source';
import type { LicenceLimits } from '../domain/grants';

export interface ServiceContext {
  config: Config;
  engine: FaceEngine;
  store: Store;
  galleries: Galleries;
  scale: SimilarityScale;
  errors: ErrorCatalog;
  /** Injectable for tests (timestamps, quota days). */
  now(): Date;
  /** Decoded request pixels in flight ([image] max_pixels_in_flight). */
  pixels: PixelBudget;
  /** Device mode: the camera (the live face, and the captures its faceKeys stand for). */
  camera?: LiveFaceSource;
  /** Device mode: the ruling licence's limits (maxPersons), read at each enrolment; absent = no limits. */
  limits?: () => LicenceLimits | undefined;
}

/** The caller, as resolved by authentication. */
export interface Caller {
  accountId: string;
}

/**
 * Every face of an image, largest first (the engine's order). Only the first `maxFaces` are analysed
 * (embedding, pose, ...); the others carry their box and size, enough to count faces. `purpose` picks the
 * models: enrolment needs the eye-state model for its checks, matching needs only the template; the
 * passive colour liveness model serves the device's camera, not photos sent to the API.
 */
export async function analyse(ctx: ServiceContext, image: RgbImage, maxFaces: number,
  purpose: 'enrol' | 'match'): Promise<FaceAnalysis[]> {
  return ctx.engine.analyze(image, { embed: true, maxFaces, eyes: purpose === 'enrol', liveness: false });
}
