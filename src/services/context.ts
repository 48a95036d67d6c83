// What every service operation works with. Routes hold none of this: they call services, which call the
// engine, the galleries and the store.
import type { Config } from '../config/types';
import type { FaceEngine, FaceAnalysis, RgbImage } from '../engine/types';
import type { ErrorCatalog } from '../errors';
import type { PixelBudget } from '../image/pixel-budget';
import type { Galleries } from '../matching/galleries';
import type { SimilarityScale } from '../matching/similarity-scale';
import type { AsyncStore, OwnChanges } from '../storage/interfaces';
import type { LiveFaceSource } from '../device/live-face-source';
import type { LicenceLimits } from '../domain/grants';
import { operationOptions, type Operation } from './operation-stages';

export interface ServiceContext {
  config: Config;
  engine: FaceEngine;
  store: AsyncStore;
  galleries: Galleries;
  /**
   * What fills the galleries from the store's commits (the backend's change log): writers leave the galleries
   * to it, wait for it to reach a section's fence before a duplicate search, and for their own write before
   * answering.
   */
  galleryFeed: GalleryFeed;
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

/** How a node's galleries follow the store's change log (../matching/gallery-follower.ts, ../matching/local-gallery-feed.ts). */
export interface GalleryFeed {
  /** Resolves once the galleries hold every change up to `seq`; fails as unavailable past its bound. */
  reach(seq: number): Promise<void>;
  /** Resolves once the galleries hold every change committed so far (read-your-writes). */
  catchUp(): Promise<void>;
  /** This node's section committed these changes: the galleries may take them without reading the log. */
  offer?(own: OwnChanges): void;
}

/** The caller, as resolved by authentication. */
export interface Caller {
  accountId: string;
}

/**
 * Every face of an image, largest first (the engine's order). Only the largest is analysed; the others carry
 * their box and size, enough to count faces. The operation picks the stages (operation-stages.ts).
 */
export async function analyse(ctx: ServiceContext, image: RgbImage, operation: Operation): Promise<FaceAnalysis[]> {
  return ctx.engine.analyze(image, operationOptions(operation));
}
