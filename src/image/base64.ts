// Strict base64 for image fields. Node's decoder silently skips invalid characters, so the text is
// checked first: RFC 4648 standard alphabet, padded to a multiple of 4, no whitespace. A data URL prefix
// ("data:image/<type>;base64,") is accepted because browsers produce it (canvas.toDataURL, FileReader);
// it is unambiguous since ':' ',' ';' are not base64 characters.

export class Base64Error extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'Base64Error';
  }
}

const DATA_URL = /^data:image\/[A-Za-z0-9.+-]+;base64,/;
const BASE64 = /^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The base64 payload without a data URL prefix. */
export function stripDataUrl(value: string): string {
  if (!value.startsWith('data:')) return value;
  const m = DATA_URL.exec(value);
  if (!m) throw new Error('only data:image/<type>;base64, URLs are accepted');
  return value.slice(m[0].length);
}

/** Number of bytes the (validated) base64 text decodes to. */
export function decodedLength(b64: string): number {
  const padding = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return (b64.length / 4) * 3 - padding;
}

/**
 * Decodes a strict base64 (or data URL) field. Throws Base64Error when the text is not base64 or would
 * decode to more than maxBytes (checked from the length, before any allocation).
 */
export function decodeBase64Field(value: string, maxBytes: number): Buffer {
  let b64: string;
  try {
    b64 = stripDataUrl(value);
  } catch (err) {
    throw new Base64Error((err as Error).message);
  }
  if (b64.length === 0) throw new Base64Error('empty');
  if (b64.length % 4 !== 0) throw new Base64Error('length is not a multiple of 4 (padding missing?)');
  const size = decodedLength(b64);
  if (size > maxBytes) throw new Base64Error(`decodes to ${size} bytes, more than [image] max_bytes=${maxBytes}`);
  const bytes = Buffer.from(b64, 'base64');
  // Text that encodes back to itself is strict base64; the pattern, many times slower on a photo's text,
  // judges only the rest (non-zero padding bits pass it, characters outside the alphabet do not).
  if (bytes.length === size && bytes.toString('base64') === b64) return bytes;
  if (!BASE64.test(b64)) throw new Base64Error('characters outside the base64 alphabet');
  return bytes;
}
