// Image fields: strict base64 (data URL accepted), byte and pixel limits, EXIF orientation,
// every pixel layout to 3-channel 8-bit RGB, undecodable input refused (the API answers R_003).
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import t from 'tap';
import { Base64Error, decodeBase64Field, decodedLength } from '../../src/image/base64';
import { BMP_ANALYSIS_PIXELS, decodeBmp } from '../../src/image/bmp';
import { decodeImageBytes, decodeImageField, ImageDecodeError } from '../../src/image/decode';
import type { PixelBudget } from '../../src/image/pixel-budget';
import { bmpFile } from '../helpers/hostile-requests';
import { dataPath, needsSharedData, qualityIndex } from '../helpers/shared-data';

const limits = { maxBytes: 1 << 20, maxPixels: 1 << 20 };
const raw = (w: number, h: number, ch: 1 | 2 | 3 | 4, px: number[]) => sharp(Buffer.from(px), { raw: { width: w, height: h, channels: ch } });

t.test('strict base64', async (t) => {
  const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 253]);
  const b64 = bytes.toString('base64');
  t.same(decodeBase64Field(b64, 100), bytes);
  t.same(decodeBase64Field(`data:image/png;base64,${b64}`, 100), bytes, 'data URL prefix accepted');
  for (const bad of ['', 'QUJD!', 'QUJ D', 'QUJD\n', 'QUI', 'QU==Q', 'QUJD_-==', 'QUJD-_-_', 'QU=D', 'QUJD\u00e9AAA', 'data:text/plain;base64,QUJD', 'data:image/png,QUJD', '====']) {
    t.throws(() => decodeBase64Field(bad, 100), Base64Error, JSON.stringify(bad));
  }
  t.same(decodeBase64Field('QR==', 100), Buffer.from('A'), 'non-zero padding bits are still base64 (not the canonical text)');
  t.equal(decodedLength('QUJDRA=='), 4);
  t.equal(decodedLength('QUJDREU='), 5);
  t.throws(() => decodeBase64Field(Buffer.alloc(101).toString('base64'), 100), /max_bytes=100/, 'byte limit before decoding');
  t.same(decodeBase64Field(Buffer.alloc(100).toString('base64'), 100).length, 100, 'exactly the limit passes');
});

t.test('EXIF orientation is applied', async (t) => {
  // 2x1: red | blue, tagged "rotate 90° clockwise to display" -> 1x2: red above blue.
  const jpeg = await raw(2, 1, 3, [255, 0, 0, 0, 0, 255]).resize(20, 10, { kernel: 'nearest' })
    .jpeg({ quality: 100 }).withMetadata({ orientation: 6 }).toBuffer();
  const rgb = await decodeImageBytes('faceImage', jpeg, limits);
  t.same([rgb.width, rgb.height], [10, 20]);
  t.ok(rgb.data[0] > 200 && rgb.data[2] < 60, 'top pixel red');
  const last = rgb.data.length - 3;
  t.ok(rgb.data[last + 2] > 200 && rgb.data[last] < 60, 'bottom pixel blue');
});

t.test('every layout becomes 8-bit RGB', async (t) => {
  const cases: [string, Buffer][] = [
    ['grey PNG', await raw(2, 2, 1, [10, 20, 30, 40]).png().toBuffer()],
    ['grey+alpha PNG', await raw(2, 2, 2, [10, 255, 20, 0, 30, 255, 40, 128]).png().toBuffer()],
    ['RGBA PNG', await raw(2, 2, 4, [1, 2, 3, 255, 4, 5, 6, 0, 7, 8, 9, 255, 1, 1, 1, 1]).png().toBuffer()],
    ['16-bit PNG', await raw(2, 2, 3, Array(12).fill(200)).toColourspace('rgb16').png().toBuffer()],
    ['palette PNG', await raw(2, 2, 3, Array(12).fill(90)).png({ palette: true }).toBuffer()],
    ['CMYK JPEG', await raw(2, 2, 3, Array(12).fill(120)).toColourspace('cmyk').jpeg().toBuffer()],
    ['WebP', await raw(2, 2, 3, Array(12).fill(50)).webp({ lossless: true }).toBuffer()],
    ['GIF', await raw(2, 2, 3, Array(12).fill(50)).gif().toBuffer()],
    ['TIFF', await raw(2, 2, 3, Array(12).fill(50)).tiff().toBuffer()],
    ['BMP 24-bit', bmp24(2, 2, [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]])],
  ];
  for (const [name, file] of cases) {
    const rgb = await decodeImageBytes('faceImage', file, limits);
    t.same([rgb.width, rgb.height, rgb.data.length], [2, 2, 12], name);
  }
  const transparent = await decodeImageBytes('x', cases[2][1], limits);
  t.same(Array.from(transparent.data.subarray(3, 6)), [255, 255, 255], 'transparent pixels flattened on white');
  const b = await decodeImageBytes('x', cases[9][1], limits);
  t.same(Array.from(b.data), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 'BMP rows bottom-up decoded in order');
});

t.test('refused: limits, vectors, garbage', async (t) => {
  const big = await raw(2, 2, 3, Array(12).fill(1)).resize(100, 100).png().toBuffer();
  await t.rejects(decodeImageBytes('faceImage', big, { maxBytes: 1 << 20, maxPixels: 9999 }), ImageDecodeError, 'pixel limit');
  await t.rejects(decodeImageBytes('faceImage', big, { maxBytes: 10, maxPixels: 1 << 20 }), ImageDecodeError, 'byte limit');
  t.ok(await decodeImageBytes('faceImage', big, { maxBytes: big.length, maxPixels: 10000 }), 'exactly at both limits');
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>');
  await t.rejects(decodeImageBytes('faceImage', svg, limits), /not accepted/, 'SVG refused');
  await t.rejects(decodeImageBytes('faceImage', Buffer.from('hello world'), limits), ImageDecodeError);
  const jpeg = await raw(2, 2, 3, Array(12).fill(9)).resize(64, 64).jpeg().toBuffer();
  await t.rejects(decodeImageBytes('faceImage', jpeg.subarray(0, jpeg.length - 200), limits), ImageDecodeError, 'truncated JPEG');
  await t.rejects(decodeImageBytes('faceImage', bmp24(2, 2, [[1, 2, 3]]).subarray(0, 40), limits), ImageDecodeError, 'truncated BMP');
  const err = await decodeImageField('sourceImage', 'not base64!', limits).catch((e: unknown) => e);
  t.type(err, ImageDecodeError);
  t.equal((err as ImageDecodeError).field, 'sourceImage');
});

t.test('shared data: one photo in six containers decodes alike; broken files are refused', needsSharedData, async (t) => {
  const rows = qualityIndex();
  const formats = rows.filter((r) => r.condition === 'format');
  t.ok(formats.length >= 6);
  const big = { maxBytes: 1 << 26, maxPixels: 1 << 26 };
  const decoded = await Promise.all(formats.map((r) => decodeImageBytes('x', fs.readFileSync(dataPath('quality', r.path)), big)));
  for (const [i, d] of decoded.entries()) {
    t.same([d.width, d.height, d.data.length], [decoded[0].width, decoded[0].height, decoded[0].width * decoded[0].height * 3], path.basename(formats[i].path));
  }
  for (const r of rows.filter((x) => x.condition === 'corrupt_file')) {
    await t.rejects(decodeImageBytes('x', fs.readFileSync(dataPath('quality', r.path)), big), ImageDecodeError, r.path);
  }
  for (const r of rows.filter((x) => ['grayscale', 'rgba_png'].includes(x.condition))) {
    const d = await decodeImageBytes('x', fs.readFileSync(dataPath('quality', r.path)), big);
    t.equal(d.data.length, d.width * d.height * 3, r.path);
  }
});

t.test('a bitmap promising more than BMP_ANALYSIS_PIXELS is decoded at an integer fraction, sampling block centres', async (t) => {
  // 1 bit a pixel, 5000 x 4000 (20 MP in 2.5 MB): pixel (x, y) is white where (x + 3 * y) % 7 == 0.
  const w = 5000;
  const h = 4000;
  const white = (x: number, y: number) => (x + 3 * y) % 7 === 0;
  const buf = bmpFile(w, h, 1, (x, y) => (white(x, y) ? 255 : 0));
  t.ok(w * h > BMP_ANALYSIS_PIXELS);
  const admitted: number[] = [];
  const budget = { tryAdmit: (pixels: number) => { admitted.push(pixels); return { release: () => undefined }; } } as unknown as PixelBudget;
  const decoded = await decodeImageField('faceImage', buf.toString('base64'), { maxBytes: 8 << 20, maxPixels: 50_000_000, budget });
  const { width, height, data } = decoded.rgb;
  t.same([width, height], [2500, 2000], 'half the width and height');
  t.same(admitted, [2500 * 2000], 'the pixel budget admits the decoded pixels');
  let wrong = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) if ((data[(y * width + x) * 3] === 255) !== white(2 * x + 1, 2 * y + 1)) wrong++;
  }
  t.equal(wrong, 0, 'every decoded pixel is the centre pixel of its 2 x 2 block');
  t.equal(decoded.bytes.length, buf.length, 'the reference image kept is the file as sent');
  const small = decodeBmp(buf.subarray(0), 50_000_000);
  t.same([small.width, small.height], [2500, 2000], 'the in-thread decoder agrees');
});

/** A 24-bit bottom-up BMP of `pixels` (row-major RGB, top row first). */
function bmp24(w: number, h: number, pixels: number[][]): Buffer {
  const stride = Math.ceil((w * 3) / 4) * 4;
  const buf = Buffer.alloc(54 + stride * h);
  buf.write('BM', 0, 'latin1');
  buf.writeUInt32LE(buf.length, 2);
  buf.writeUInt32LE(54, 10);
  buf.writeUInt32LE(40, 14);
  buf.writeInt32LE(w, 18);
  buf.writeInt32LE(h, 22);
  buf.writeUInt16LE(1, 26);
  buf.writeUInt16LE(24, 28);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const [r, g, b] = pixels[y * w + x] ?? [0, 0, 0];
      const o = 54 + (h - 1 - y) * stride + x * 3;
      buf[o] = b; buf[o + 1] = g; buf[o + 2] = r;
    }
  }
  return buf;
}
