// Image fields of a request -> pixels, with every decoding failure reported as R_003. Strict for every
// operation: an image that does not decode cleanly is refused, for a probe as for a reference.
import { decodeImageField, ImageDecodeError, type DecodedImage } from '../image/decode';
import type { ServiceContext } from './context';

export async function decodeField(ctx: ServiceContext, field: string, value: string): Promise<DecodedImage> {
  try {
    return await decodeImageField(field, value, {
      maxBytes: ctx.config.image.max_bytes,
      maxPixels: ctx.config.image.max_pixels,
      strict: true,
    });
  } catch (err) {
    if (err instanceof ImageDecodeError) throw ctx.errors.create('FieldsValidation', err.message);
    throw err;
  }
}
