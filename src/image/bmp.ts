// A small Windows BMP decoder: sharp's libvips build has no BMP loader, and BMP is still what some kiosk
// and scanner software saves. Supports uncompressed 1/4/8-bit palette, 24-bit and 32-bit (BI_RGB and
// BI_BITFIELDS) images, bottom-up or top-down. Alpha is ignored (BMP alpha is rarely meaningful).
// The header is read and checked on the calling thread (cheap, and the pixel limit applies before any
// allocation); the pixel loop runs in a worker (decode-worker.ts) so it never stalls the event loop.
// A bitmap carries as little as one bit a pixel, so a file of a few megabytes can promise tens of megapixels:
// one over BMP_ANALYSIS_PIXELS is decoded at an integer fraction of its size (the centre pixel of each k x k
// block), so its cost follows the pixels analysed, not the pixels promised. A face that fills a tenth of such
// an image still spans over a thousand pixels.
import type { RgbImage } from '../engine/types';
import { runInWorker } from './decode-worker';

export function isBmp(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x42 && bytes[1] === 0x4d; // "BM"
}

/** Bitmaps larger than this are decoded at 1/k of their width and height (the smallest k that fits). */
export const BMP_ANALYSIS_PIXELS = 16_000_000;

const BI_RGB = 0;
const BI_BITFIELDS = 3;
const BI_ALPHABITFIELDS = 6;

/** Everything the pixel loop needs, checked against the file's length. */
export interface BmpLayout {
  /** The file's pixels. */
  width: number;
  height: number;
  /** Decoded at 1/scale of width and height (1: every pixel). */
  scale: number;
  topDown: boolean;
  bitCount: number;
  dataOffset: number;
  stride: number;
  /** 256 RGB entries for 1/4/8-bit images. */
  palette?: number[];
  /** R, G, B masks for BI_BITFIELDS. */
  masks?: [number, number, number];
}

/** Reads and checks the header: throws on anything unsupported, truncated or over maxPixels. */
export function readBmpLayout(bytes: Uint8Array, maxPixels: number): BmpLayout {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (n: number) => {
    if (buf.length < n) throw new Error('BMP file is truncated');
  };
  need(26);
  const dataOffset = buf.readUInt32LE(10);
  const headerSize = buf.readUInt32LE(14);
  let width: number;
  let rawHeight: number;
  let bitCount: number;
  let compression = BI_RGB;
  let colorsUsed = 0;
  let paletteEntrySize = 4;
  if (headerSize === 12) {
    width = buf.readUInt16LE(18);
    rawHeight = buf.readUInt16LE(20);
    bitCount = buf.readUInt16LE(24);
    paletteEntrySize = 3;
  } else if (headerSize >= 40) {
    need(54);
    width = buf.readInt32LE(18);
    rawHeight = buf.readInt32LE(22);
    bitCount = buf.readUInt16LE(28);
    compression = buf.readUInt32LE(30);
    colorsUsed = buf.readUInt32LE(46);
  } else {
    throw new Error(`unsupported BMP header size ${headerSize}`);
  }
  const topDown = rawHeight < 0;
  const height = Math.abs(rawHeight);
  if (width <= 0 || height <= 0) throw new Error('BMP has no pixels');
  if (width * height > maxPixels) throw new Error(`image has ${width * height} pixels, more than the limit ${maxPixels}`);

  let masks: [number, number, number] | undefined;
  if (compression === BI_BITFIELDS || compression === BI_ALPHABITFIELDS) {
    if (bitCount !== 32) throw new Error(`unsupported BMP: bitfields with ${bitCount} bits`);
    need(14 + 40 + 12);
    masks = [buf.readUInt32LE(54), buf.readUInt32LE(58), buf.readUInt32LE(62)];
  } else if (compression !== BI_RGB) {
    throw new Error(`unsupported BMP compression ${compression}`);
  }

  let palette: number[] | undefined;
  if (bitCount <= 8) {
    if (![1, 4, 8].includes(bitCount)) throw new Error(`unsupported BMP bit depth ${bitCount}`);
    const entries = colorsUsed || 1 << bitCount;
    const start = 14 + headerSize;
    need(start + Math.min(entries, 256) * paletteEntrySize);
    palette = new Array<number>(256 * 3).fill(0);
    for (let i = 0; i < entries && i < 256; i++) {
      const p = start + i * paletteEntrySize;
      palette[i * 3] = buf[p + 2];
      palette[i * 3 + 1] = buf[p + 1];
      palette[i * 3 + 2] = buf[p];
    }
  } else if (bitCount !== 24 && bitCount !== 32) {
    throw new Error(`unsupported BMP bit depth ${bitCount}`);
  }

  const stride = Math.floor((bitCount * width + 31) / 32) * 4;
  need(dataOffset + stride * height);
  let scale = 1;
  while (Math.floor(width / scale) * Math.floor(height / scale) > BMP_ANALYSIS_PIXELS) scale++;
  return { width, height, scale, topDown, bitCount, dataOffset, stride, ...(palette ? { palette } : {}), ...(masks ? { masks } : {}) };
}

/**
 * The pixel loop. Self-contained (no imports, no module-level names): its source text is what the worker
 * runs, so it behaves the same from the TypeScript sources and from the compiled dist/.
 */
export function bmpPixels(bytes: Uint8Array, layout: BmpLayout): Uint8Array {
  const { topDown, bitCount, dataOffset, stride, palette, masks, scale } = layout;
  // Decoded size; source pixel of decoded (x, y): (x * scale + half, y * scale + half).
  const width = Math.max(1, Math.floor(layout.width / scale));
  const height = Math.max(1, Math.floor(layout.height / scale));
  const half = scale >> 1;
  const maskReader = (mask: number): ((v: number) => number) => {
    if (mask === 0) return () => 0;
    let shift = 0;
    while (((mask >>> shift) & 1) === 0) shift++;
    const max = mask >>> shift;
    return (v) => Math.round((((v & mask) >>> shift) / max) * 255);
  };
  const buf = bytes;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Uint8Array(width * height * 3);
  const channel = masks?.map(maskReader);
  if (palette && scale === 1) {
    // Palette images expand byte by byte through a table of each byte value's pixels (8, 2 or 1 of them):
    // a 1-bit 50-megapixel image is a few copies per pixel instead of a bit extraction per pixel.
    const perByte = 8 / bitCount;
    const table = new Uint8Array(256 * perByte * 3);
    for (let b = 0; b < 256; b++) {
      for (let k = 0; k < perByte; k++) {
        const index = (b >> (8 - bitCount * (k + 1))) & ((1 << bitCount) - 1);
        const t = (b * perByte + k) * 3;
        table[t] = palette[index * 3];
        table[t + 1] = palette[index * 3 + 1];
        table[t + 2] = palette[index * 3 + 2];
      }
    }
    const fullBytes = Math.floor(width / perByte);
    const tail = (width - fullBytes * perByte) * 3;
    const span = perByte * 3;
    for (let y = 0; y < height; y++) {
      const row = dataOffset + (topDown ? y : height - 1 - y) * stride;
      let o = y * width * 3;
      for (let i = 0; i < fullBytes; i++) {
        let t = buf[row + i] * span;
        for (let k = 0; k < span; k++) out[o++] = table[t++];
      }
      if (tail > 0) {
        let t = buf[row + fullBytes] * span;
        for (let k = 0; k < tail; k++) out[o++] = table[t++];
      }
    }
    return out;
  }
  for (let y = 0; y < height; y++) {
    const sy = y * scale + half;
    const row = dataOffset + (topDown ? sy : layout.height - 1 - sy) * stride;
    let o = y * width * 3;
    for (let x = 0; x < width; x++, o += 3) {
      const sx = x * scale + half;
      if (palette) {
        const bitPos = sx * bitCount;
        const byte = buf[row + (bitPos >> 3)];
        const index = (byte >> (8 - bitCount - (bitPos & 7))) & ((1 << bitCount) - 1);
        out[o] = palette[index * 3];
        out[o + 1] = palette[index * 3 + 1];
        out[o + 2] = palette[index * 3 + 2];
      } else if (channel) {
        const v = view.getUint32(row + sx * 4, true);
        out[o] = channel[0](v);
        out[o + 1] = channel[1](v);
        out[o + 2] = channel[2](v);
      } else {
        const p = row + sx * (bitCount >> 3);
        out[o] = buf[p + 2];
        out[o + 1] = buf[p + 1];
        out[o + 2] = buf[p];
      }
    }
  }
  return out;
}

/** Decodes on the calling thread (tools and tests); the service uses decodeBmpOffThread. */
export function decodeBmp(bytes: Uint8Array, maxPixels: number): RgbImage {
  const layout = readBmpLayout(bytes, maxPixels);
  return { data: bmpPixels(bytes, layout), ...decodedSize(layout) };
}

/** The decoded image's size (bmpPixels'). */
export function decodedSize(layout: BmpLayout): { width: number; height: number } {
  return { width: Math.max(1, Math.floor(layout.width / layout.scale)), height: Math.max(1, Math.floor(layout.height / layout.scale)) };
}

/** The pixel loop in a worker thread, for a header already read and checked (readBmpLayout). */
export async function decodeBmpOffThread(bytes: Uint8Array, layout: BmpLayout): Promise<RgbImage> {
  const data = await runInWorker('bmp', bmpPixels, [bytes, layout]);
  return { data, ...decodedSize(layout) };
}
