// Image fields of a request -> pixels, with every decoding failure reported as R_003. Strict for every
// operation: an image that does not decode cleanly is refused, for a probe as for a reference.
import { decodeImageField, ImageDecodeError, type DecodedImage } from '../image/decode';
import { PixelBudgetError } from '../image/pixel-budget';
import type { ServiceContext } from './context';

/** Runs `use` while the image's pixels are needed, then gives them back to the budget, whatever happens. */
export async function releasing<T>(image: DecodedImage, use: (image: DecodedImage) => Promise<T>): Promise<T> {
  try {
    return await use(image);
  } finally {
    image.release();
  }
}

export async function decodeField(ctx: ServiceContext, field: string, value: string): Promise<DecodedImage> {
  try {
    return await decodeImageField(field, value, {
      maxBytes: ctx.config.image.max_bytes,
      maxPixels: ctx.config.image.max_pixels,
      strict: true,
      budget: ctx.pixels,
    });
  } catch (err) {
    if (err instanceof ImageDecodeError) throw ctx.errors.create('FieldsValidation', err.message);
    if (err instanceof PixelBudgetError) {
      const busy = ctx.errors.create('ServiceUnavailable', err.message);
      busy.retryAfterSeconds = 1;
      throw busy;
    }
    throw err;
  }
}
