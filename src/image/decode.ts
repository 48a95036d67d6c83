// Image bytes -> interleaved 8-bit RGB for the engine, with explicit limits. EXIF orientation is applied
// (phones store rotated pixels plus a tag); greyscale, alpha (flattened on white), 16-bit, palette and
// CMYK all become 3-channel sRGB. Accepted containers: JPEG, PNG, WebP, GIF (first frame), TIFF, AVIF, BMP.
// No decoding runs on the event loop: sharp decodes on libuv's thread pool, BMP in a worker (bmp.ts); both
// check width x height from the header before allocating pixels.
import sharp from 'sharp';
import type { RgbImage } from '../engine/types';
import { decodeBmpOffThread, decodedSize, isBmp, readBmpLayout } from './bmp';
import { PixelBudgetError, type PixelBudget, type PixelLease } from './pixel-budget';
import { decodeBase64Field } from './base64';

export interface ImageLimits {
  /** Largest decoded image file, in bytes ([image] max_bytes). */
  maxBytes: number;
  /** Largest width x height ([image] max_pixels). */
  maxPixels: number;
  /**
   * Refuse files the decoder only warns about (bit-flipped scan data, a JPEG cut short and closed with an end
   * marker, a header promising more pixels than the file holds): sharp's failOn 'warning' instead of 'error'.
   * Request images are strict; re-reading stored references (reindex) need not be.
   */
  strict?: boolean;
  /** Decoded pixels in flight across requests; the image's pixels are admitted before they are decoded. */
  budget?: PixelBudget;
}

/** The field could not become an image: the service answers R_003. `reason` goes to the log only. */
export class ImageDecodeError extends Error {
  constructor(readonly field: string, readonly reason: string) {
    super(`${field}: ${reason}`);
    this.name = 'ImageDecodeError';
  }
}

// libvips' operation cache keeps recent results for reuse; request images never repeat, so it would only
// hold memory (up to 50 MB, plus decoded images kept alive by cached operations).
sharp.cache(false);

/** Vector and raw inputs are refused: a face photo is a raster image file. */
const ACCEPTED_FORMATS = new Set(['jpeg', 'png', 'webp', 'gif', 'tiff', 'heif']);

export interface DecodedImage {
  /** The original file bytes (kept as the reference image). */
  bytes: Buffer;
  rgb: RgbImage;
  /** Gives the pixels back to the budget once the engine is done with them (safe to call twice). */
  release(): void;
}

/** Decodes a base64 JSON field (strict; data URL accepted) into file bytes and RGB pixels. */
export async function decodeImageField(field: string, value: string, limits: ImageLimits): Promise<DecodedImage> {
  let bytes: Buffer;
  try {
    bytes = decodeBase64Field(value, limits.maxBytes);
  } catch (err) {
    throw new ImageDecodeError(field, `base64: ${(err as Error).message}`);
  }
  let lease: PixelLease | undefined;
  // Admitted from the header the decoder reads anyway, before any pixel is decoded.
  const admit = limits.budget && ((pixels: number) => {
    lease = limits.budget!.tryAdmit(pixels);
    if (!lease) throw new PixelBudgetError(field, pixels, limits.budget!);
  });
  try {
    return { bytes, rgb: await decode(field, bytes, limits, admit), release: () => lease?.release() };
  } catch (err) {
    lease?.release();
    throw err;
  }
}

export async function decodeImageBytes(field: string, bytes: Uint8Array, limits: ImageLimits): Promise<RgbImage> {
  return decode(field, bytes, limits);
}

/** `admit` sees width x height once the header is read and may refuse (PixelBudgetError) before decoding. */
async function decode(field: string, bytes: Uint8Array, limits: ImageLimits, admit?: (pixels: number) => void): Promise<RgbImage> {
  if (bytes.length > limits.maxBytes) {
    throw new ImageDecodeError(field, `${bytes.length} bytes, more than [image] max_bytes=${limits.maxBytes}`);
  }
  try {
    if (isBmp(bytes)) {
      const layout = readBmpLayout(bytes, limits.maxPixels);
      const size = decodedSize(layout);
      admit?.(size.width * size.height);
      return await decodeBmpOffThread(bytes, layout);
    }
    const input = sharp(bytes, { limitInputPixels: limits.maxPixels, failOn: limits.strict ? 'warning' : 'error', animated: false });
    const meta = await input.metadata();
    if (!meta.format || !ACCEPTED_FORMATS.has(meta.format)) {
      throw new Error(`format ${meta.format ?? 'unknown'} is not accepted`);
    }
    admit?.((meta.width ?? 0) * (meta.height ?? 0));
    const { data, info } = await input
      .rotate()
      .flatten({ background: '#ffffff' })
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`decoder produced ${info.channels} channels`);
    return { data, width: info.width, height: info.height };
  } catch (err) {
    if (err instanceof PixelBudgetError) throw err;
    throw new ImageDecodeError(field, (err as Error).message);
  }
}
