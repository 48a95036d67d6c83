// Hostile HTTP requests for the fuzz test (test/http/http-fuzz.test.ts) and the reliability benchmark
// (bench/reliability-fuzz.ts): fast-check generators of raw request bytes (raw-http.ts sends them and checks
// the answers) and a corpus of valid, damaged and bomb images of every accepted format. No test framework
// here: the benchmark, compiled to dist/, imports this module too.
import fc from 'fast-check';
import sharp from 'sharp';
import { buildRequest, type HostileRequest, type RequestParts } from './raw-http';

export * from './raw-http';

const json = (apiKey: string): [string, string][] => [['Api-Key', apiKey], ['Content-Type', 'application/json']];

/** The routes that take a JSON body, by the image fields they read. */
const BODY_ROUTES: { method: string; path: string; fields: string[] }[] = [
  { method: 'POST', path: '/person/face/fuzz-create', fields: ['faceImage'] },
  { method: 'PUT', path: '/person/face/fuzz-update', fields: ['faceImage'] },
  { method: 'POST', path: '/person/recognize-face', fields: ['faceImage'] },
  { method: 'POST', path: '/person/verify-face/fuzz-verify', fields: ['faceImage'] },
  { method: 'POST', path: '/person/compare-face', fields: ['targetImage', 'sourceImage'] },
];
const bodyRoute = fc.constantFrom(...BODY_ROUTES);

/** A body that is a valid image request except for the given field values. */
function imageBody(route: { fields: string[] }, value: string): string {
  return JSON.stringify(Object.fromEntries(route.fields.map((f) => [f, value])));
}

const badJson = fc.oneof(
  fc.constantFrom('{', '}', '[', '{"faceImage":', '{"faceImage":"abc",}', "{'faceImage':'x'}", 'null', 'true', '"x"', '42',
    '[]', '{"faceImage":"a"}{"faceImage":"b"}', '{"faceImage":"\\u12"}', '\u0000', '{"a":1e999999}', 'NaN', '{"faceImage":undefined}',
    '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '\ufeff{"faceImage":"QUJD"}'),
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
);

const deepNesting = fc.tuple(fc.integer({ min: 9, max: 200_000 }), fc.constantFrom('[', '{"a":', '{"faceImage":[')).map(([depth, open]) =>
  open.repeat(depth));

const wrongTypes = fc.record({
  value: fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string({ maxLength: 5 }), { maxLength: 5 }),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }), fc.constant(''), fc.double()),
  extra: fc.option(fc.constantFrom('faceimage', 'similarityThreshold', 'faceKey', 'personId', 'x'), { nil: undefined }),
  threshold: fc.option(fc.oneof(fc.constant('80'), fc.double(), fc.integer({ min: -1000, max: 1000 })), { nil: undefined }),
});

const manyValues = fc.integer({ min: 1001, max: 400_000 }).map((n) => `{"faceImage":[${'1,'.repeat(n)}1]}`);

const badBase64 = fc.oneof(
  fc.string({ unit: fc.constantFrom(...'ABCabc012+/=-_ \n\t!*.'), minLength: 1, maxLength: 400 }),
  fc.constantFrom('QUJD', 'QUJ', 'QUJD\n', 'QU JD', 'QUJD====', '-_-_', 'data:image/png;base64,', 'data:text/plain;base64,QUJD',
    'data:image/png;base64,QUJD!', 'data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=', '////', 'AAAA'),
);

/** A big but in-limit string (base64 alphabet or not), so decoding and checks run on megabytes. */
const hugeString = fc.tuple(fc.integer({ min: 100_000, max: 3_000_000 }), fc.constantFrom('A', 'QUJD', '/', '#', 'é')).map(([n, unit]) =>
  unit.repeat(Math.ceil(n / unit.length)).slice(0, n));

const bodyCases: fc.Arbitrary<HostileRequest>[] = [
  fc.tuple(bodyRoute, badJson).map(([r, body]) => ({ kind: 'body:bad-json', bytes: buildRequest({ ...r, headers: [], body }) })),
  fc.tuple(bodyRoute, deepNesting).map(([r, body]) => ({ kind: 'body:deep', bytes: buildRequest({ ...r, body }) })),
  fc.tuple(bodyRoute, manyValues).map(([r, body]) => ({ kind: 'body:many-values', bytes: buildRequest({ ...r, body }) })),
  fc.tuple(bodyRoute, wrongTypes).map(([r, w]) => {
    const body: Record<string, unknown> = Object.fromEntries(r.fields.map((f) => [f, w.value]));
    if (w.extra) body[w.extra] = 'x';
    if (w.threshold !== undefined) body.similarityThreshold = w.threshold;
    return { kind: 'body:wrong-types', bytes: buildRequest({ ...r, body: JSON.stringify(body) }) };
  }),
  fc.tuple(bodyRoute, badBase64).map(([r, v]) => ({ kind: 'body:bad-base64', bytes: buildRequest({ ...r, body: imageBody(r, v) }) })),
  fc.tuple(bodyRoute, hugeString).map(([r, v]) => ({ kind: 'body:huge-string', bytes: buildRequest({ ...r, body: imageBody(r, v) }) })),
  fc.tuple(bodyRoute, fc.uint8Array({ maxLength: 300 })).map(([r, b]) => ({ kind: 'body:binary', bytes: buildRequest({ ...r, body: Buffer.from(b) }) })),
];

const CONTENT_TYPES = ['text/plain', 'application/json; charset=latin1', 'application/jsonx', 'multipart/form-data; boundary=x',
  '', 'application/json, text/plain', 'application/x-www-form-urlencoded', 'APPLICATION/JSON', 'application/json;;;',
  'application/json; charset="utf-8"', '*/*', 'application/problem+json'];

function headerCase(apiKey: string): fc.Arbitrary<HostileRequest> {
  const body = '{"faceImage":"QUJD"}';
  const post = (kind: string, headers: [string, string][], extra: Partial<RequestParts> = {}) =>
    ({ kind: `headers:${kind}`, bytes: buildRequest({ method: 'POST', path: '/person/recognize-face', headers, body, ...extra }) });
  const key: [string, string] = ['Api-Key', apiKey];
  return fc.oneof(
    fc.constantFrom(...CONTENT_TYPES).map((ct) => post('content-type', [key, ['Content-Type', ct]])),
    fc.constant(post('no-content-type', [key])),
    fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 })).map(([a, b]) =>
      post('two-lengths', [key, ['Content-Type', 'application/json'], ['Content-Length', String(a)], ['Content-Length', String(b)]], { contentLength: false })),
    fc.integer({ min: 0, max: 19 }).map((n) =>
      post('short-length', [key, ['Content-Type', 'application/json'], ['Content-Length', String(n)]], { contentLength: false })),
    fc.constantFrom('-1', 'abc', '1e3', '0x10', ' 20', '99999999999999999999', '20, 20').map((v) =>
      post('bad-length', [key, ['Content-Type', 'application/json'], ['Content-Length', v]], { contentLength: false })),
    fc.constant(post('length-and-chunked', [key, ['Content-Type', 'application/json'], ['Content-Length', '20'], ['Transfer-Encoding', 'chunked']], { contentLength: false })),
    fc.constantFrom('zz\r\n{}\r\n0\r\n\r\n', '-1\r\n\r\n', '2\r\n{}0\r\n\r\n', 'ffffffffffffffffff\r\n', '2;ext\r\n{}\r\n0\r\n\r\n').map((b) =>
      ({ kind: 'headers:bad-chunks', bytes: buildRequest({ method: 'POST', path: '/person/recognize-face', headers: [key, ['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']], body: b, contentLength: false }) })),
    fc.constantFrom('gzip', 'chunked, gzip', 'identity', 'x').map((te) =>
      post('transfer-encoding', [key, ['Content-Type', 'application/json'], ['Transfer-Encoding', te]], { contentLength: false })),
    fc.constant({ kind: 'headers:folded', bytes: Buffer.from(`POST /person/recognize-face HTTP/1.1\r\nHost: x\r\nApi-Key: ${apiKey}\r\nContent-Type: application/json\r\n x-folded\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`) }),
    fc.integer({ min: 17_000, max: 80_000 }).map((n) => post('huge-header', [key, ['X-Big', 'a'.repeat(n)]])),
    fc.constantFrom('\u0000', 'a\rb', '\u007f', 'é').map((v) => post('bad-header-value', [key, ['Content-Type', 'application/json'], ['X-Bad', v]])),
    fc.constantFrom('X Bad', 'X:Bad', '', '(x)', 'X\u0000').map((n) => post('bad-header-name', [key, [n, 'v']])),
    fc.constant(post('no-host', [key, ['Content-Type', 'application/json']], { host: null })),
    fc.constant(post('two-hosts', [key, ['Content-Type', 'application/json'], ['Host', 'other']])),
    fc.constantFrom('', 'fc_wrong', 'x'.repeat(5000), `${apiKey} `, `${apiKey}\u0001`).map((k) => post('api-key', [['Api-Key', k], ['Content-Type', 'application/json']])),
    fc.constant(post('two-api-keys', [key, ['Api-Key', 'fc_wrong'], ['Content-Type', 'application/json']])),
    fc.constant(post('no-api-key', [['Content-Type', 'application/json']])),
    fc.constant(post('upgrade', [key, ['Content-Type', 'application/json'], ['Upgrade', 'websocket'], ['Connection', 'Upgrade']])),
    fc.constant(post('expect', [key, ['Content-Type', 'application/json'], ['Expect', '100-continue']])),
    fc.constant(post('expect-bad', [key, ['Content-Type', 'application/json'], ['Expect', 'teapot']])),
  );
}

/** Requests that stop short: answered only when the server's request timeout runs out, so each holds a
 *  connection that long (kept rare by hostileRequest's weights). */
function slowCase(apiKey: string): fc.Arbitrary<HostileRequest> {
  const key: [string, string] = ['Api-Key', apiKey];
  const body = '{"faceImage":"QUJD"}';
  return fc.constantFrom(
    { kind: 'slow:longer-length', slow: true, bytes: buildRequest({ method: 'POST', path: '/person/recognize-face', headers: [key, ['Content-Type', 'application/json'], ['Content-Length', '21']], body, contentLength: false }) },
    { kind: 'slow:unfinished-chunks', slow: true, bytes: buildRequest({ method: 'POST', path: '/person/recognize-face', headers: [key, ['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']], body: '2\r\n{}\r\n', contentLength: false }) },
    { kind: 'slow:unfinished-headers', slow: true, bytes: Buffer.from(`POST /person/recognize-face HTTP/1.1\r\nHost: x\r\nApi-Key: ${apiKey}\r\n`) },
  );
}

const idChar = fc.constantFrom(...'abcXYZ019_.-', '%41', '%2F', '%00', '%', '%G1', '%e9', '%C3%A9', '/', '..', ' ', '\u0001', '\t',
  'é', '😀', '?', '#', ';', '*', '\\', '"', '<', '\u007f');

function pathCase(apiKey: string): fc.Arbitrary<HostileRequest> {
  const id = fc.oneof(
    fc.array(idChar, { maxLength: 40 }).map((a) => a.join('')),
    fc.integer({ min: 60, max: 5000 }).map((n) => 'a'.repeat(n)),
    fc.integer({ min: 101, max: 200 }).map((n) => 'b'.repeat(n)),
  );
  const prefix = fc.constantFrom('/person/face/', '/person/verify-face/', '/person/face', '/person//face/', '/PERSON/face/', '/', '',
    '/person/recognize-face/', 'http://127.0.0.1/person/face/', '*', '/docs/', '/openapi.json?x=');
  return fc.tuple(fc.constantFrom('GET', 'DELETE', 'POST', 'PUT'), prefix, id, fc.constantFrom('', '?a=1', '?faceImage=x', '#x', '?%', '?a=%zz'))
    .map(([method, pre, i, query]) => ({
      kind: 'path',
      bytes: buildRequest({ method, path: `${pre}${i}${query}`, headers: json(apiKey), body: method === 'POST' || method === 'PUT' ? '{"faceImage":"QUJD"}' : undefined }),
    }));
}

function methodCase(apiKey: string): fc.Arbitrary<HostileRequest> {
  const method = fc.oneof(
    fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'CONNECT', 'get', 'Post', 'PRI', 'FOO',
      'PROPFIND', 'MKCOL', 'QUERY', 'SEARCH', 'G ET', 'POST\u0000', 'GET\t'),
    fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZ-_!'), minLength: 1, maxLength: 30 }),
    fc.integer({ min: 100, max: 10_000 }).map((n) => 'X'.repeat(n)),
  );
  const version = fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/0.9', 'HTTP/1.2', 'http/1.1', 'HTTP/11', '');
  const path = fc.constantFrom('/person/face/alice', '/person/recognize-face', '/person/compare-face', '/person/face/', '/nowhere');
  return fc.tuple(method, version, path).map(([m, v, p]) => ({
    kind: 'method',
    head: m === 'HEAD',
    bytes: buildRequest({ method: m, path: p, version: v, headers: json(apiKey), body: m === 'POST' || m === 'PUT' ? '{"faceImage":"QUJD"}' : undefined }),
  }));
}

// ---------------------------------------------------------------------------------------------------------
// Images

/** Files of every accepted format (small, valid), plus decompression bombs, made once with sharp. */
export interface ImageCorpus {
  valid: { format: string; bytes: Buffer }[];
  /** Tiny files that decode to a huge image: within and above the pixel bound given to makeImageCorpus. */
  bombs: { name: string; bytes: Buffer }[];
}

/** A little BMP (24-bit or 1-bit palette) written by hand: sharp cannot write BMP. */
export function bmpFile(width: number, height: number, bits: 1 | 24, pixel: (x: number, y: number) => number): Buffer {
  const stride = Math.floor((bits * width + 31) / 32) * 4;
  const palette = bits === 1 ? 8 : 0;
  const offset = 14 + 40 + palette;
  const buf = Buffer.alloc(offset + stride * height);
  buf.write('BM', 0, 'latin1');
  buf.writeUInt32LE(buf.length, 2);
  buf.writeUInt32LE(offset, 10);
  buf.writeUInt32LE(40, 14);
  buf.writeInt32LE(width, 18);
  buf.writeInt32LE(height, 22);
  buf.writeUInt16LE(1, 26);
  buf.writeUInt16LE(bits, 28);
  if (bits === 1) buf.writeUInt32LE(0x00ffffff, 14 + 40 + 4); // palette: black, white
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const v = pixel(x, y) & 255;
      const row = offset + (height - 1 - y) * stride;
      if (bits === 24) buf.fill(v, row + x * 3, row + x * 3 + 3);
      else if (v > 127) buf[row + (x >> 3)] |= 0x80 >> (x & 7);
    }
  }
  return buf;
}

/** A header-only BMP claiming width x height: the pixel bound must refuse it before any decoding. */
function bmpHeaderOnly(width: number, height: number): Buffer {
  const b = bmpFile(8, 8, 1, () => 0);
  b.writeInt32LE(width, 18);
  b.writeInt32LE(height, 22);
  return b;
}

export async function makeImageCorpus(maxPixels: number): Promise<ImageCorpus> {
  const w = 96;
  const h = 96;
  const raw = Buffer.alloc(w * h * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 7919) % 251;
  const img = () => sharp(raw, { raw: { width: w, height: h, channels: 3 } });
  const valid = [
    { format: 'jpeg', bytes: await img().jpeg().toBuffer() },
    { format: 'png', bytes: await img().png().toBuffer() },
    { format: 'webp', bytes: await img().webp().toBuffer() },
    { format: 'gif', bytes: await img().gif().toBuffer() },
    { format: 'tiff', bytes: await img().tiff().toBuffer() },
    { format: 'avif', bytes: await img().avif({ effort: 0 }).toBuffer() },
    { format: 'bmp', bytes: bmpFile(w, h, 24, (x, y) => (x * y) & 255) },
    { format: 'bmp1', bytes: bmpFile(w, h, 1, (x, y) => ((x ^ y) & 8) * 32) },
  ];
  // Bombs: a side just inside the pixel bound, and one well beyond it.
  const inside = Math.floor(Math.sqrt(maxPixels * 0.95));
  const outside = Math.ceil(Math.sqrt(maxPixels * 4));
  const blank = (side: number) => sharp({ create: { width: side, height: side, channels: 3, background: '#808080' } });
  const bombs = [
    { name: 'png-inside', bytes: await blank(inside).png({ compressionLevel: 9 }).toBuffer() },
    { name: 'png-outside', bytes: await blank(outside).png({ compressionLevel: 9 }).toBuffer() },
    { name: 'jpeg-outside', bytes: await blank(outside).jpeg({ quality: 10 }).toBuffer() },
    { name: 'webp-inside', bytes: await blank(Math.min(inside, 16383)).webp({ quality: 10 }).toBuffer() },
    { name: 'bmp-header-outside', bytes: bmpHeaderOnly(outside, outside) },
    { name: 'bmp-header-huge', bytes: bmpHeaderOnly(0x7fffffff, 0x7fffffff) },
  ];
  return { valid, bombs };
}

/** Damage to a valid file: cut, bit flips, garbage, a lying size in the header. */
const damage = fc.oneof(
  fc.double({ min: 0, max: 0.99, noNaN: true }).map((f) => ({ name: 'truncated', apply: (b: Buffer) => b.subarray(0, Math.floor(b.length * f)) })),
  fc.double({ min: 0.05, max: 0.95, noNaN: true }).map((f) => ({ name: 'cut+eoi', apply: (b: Buffer) => Buffer.concat([b.subarray(0, Math.floor(b.length * f)), Buffer.from([0xff, 0xd9])]) })),
  fc.tuple(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 1 << 30 })).map(([n, seed]) => ({
    name: 'bit-flips',
    apply: (b: Buffer) => {
      const out = Buffer.from(b);
      let s = seed;
      for (let k = 0; k < n; k++) {
        s = (s * 1103515245 + 12345) & 0x7fffffff;
        const p = 2 + (s % Math.max(1, out.length - 2));
        out[p] ^= 1 << (s & 7);
      }
      return out;
    },
  })),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((g) => ({ name: 'garbage-tail', apply: (b: Buffer) => Buffer.concat([b, Buffer.from(g)]) })),
  fc.integer({ min: 0, max: 64 }).map((at) => ({ name: 'header-garbage', apply: (b: Buffer) => { const o = Buffer.from(b); o.fill(0xff, at, at + 8); return o; } })),
  fc.constant({ name: 'size-lie', apply: claimHugeSize }),
);

/** Rewrites the dimensions in the header to ~7000 x 7000 (JPEG SOF, PNG IHDR, BMP) on the small file. */
function claimHugeSize(b: Buffer): Buffer {
  const o = Buffer.from(b);
  if (o[0] === 0xff && o[1] === 0xd8) {
    for (let i = 2; i < o.length - 9; i++) {
      if (o[i] === 0xff && o[i + 1] >= 0xc0 && o[i + 1] <= 0xc2) {
        o.writeUInt16BE(7000, i + 5);
        o.writeUInt16BE(7000, i + 7);
        break;
      }
    }
  } else if (o.subarray(1, 4).toString('latin1') === 'PNG') {
    o.writeUInt32BE(7000, 16);
    o.writeUInt32BE(7000, 20);
  } else if (o[0] === 0x42 && o[1] === 0x4d) {
    o.writeInt32LE(7000, 18);
    o.writeInt32LE(7000, 22);
  }
  return o;
}

function imageCase(corpus: ImageCorpus): fc.Arbitrary<HostileRequest> {
  const damaged = fc.tuple(fc.constantFrom(...corpus.valid), damage).map(([f, d]) => ({ name: `${f.format}:${d.name}`, bytes: d.apply(f.bytes) }));
  const intact = fc.constantFrom(...corpus.valid).map((f) => ({ name: `${f.format}:intact`, bytes: f.bytes }));
  const bomb = fc.constantFrom(...corpus.bombs).map((b) => ({ name: `bomb:${b.name}`, bytes: b.bytes }));
  // Bombs inside the pixel bound cost a full decode and analysis each: present, not dominant.
  const file = fc.oneof({ arbitrary: damaged, weight: 10 }, { arbitrary: intact, weight: 2 }, { arbitrary: bomb, weight: 1 });
  return fc.tuple(bodyRoute, file, fc.boolean()).map(([r, f, dataUrl]) => {
    const value = (dataUrl ? 'data:image/png;base64,' : '') + f.bytes.toString('base64');
    return { kind: `image:${f.name}`, bytes: buildRequest({ ...r, body: imageBody(r, value) }) };
  });
}

/** Every kind of hostile request, weighted so each family gets a fair share. */
export function hostileRequest(apiKey: string, corpus: ImageCorpus): fc.Arbitrary<HostileRequest> {
  const withKey = (a: fc.Arbitrary<HostileRequest>) => a.map((r) => ({ ...r, bytes: addKey(r.bytes, apiKey) }));
  return fc.oneof(
    { arbitrary: fc.oneof(...bodyCases.map(withKey)), weight: 60 },
    { arbitrary: headerCase(apiKey), weight: 60 },
    { arbitrary: pathCase(apiKey), weight: 40 },
    { arbitrary: methodCase(apiKey), weight: 20 },
    { arbitrary: withKey(imageCase(corpus)), weight: 60 },
    { arbitrary: slowCase(apiKey), weight: 1 },
  );
}

/** Adds the Api-Key and JSON Content-Type after the request line of a request built without headers. */
function addKey(bytes: Buffer, apiKey: string): Buffer {
  const eol = bytes.indexOf('\r\n');
  const head = bytes.subarray(0, bytes.indexOf('\r\n\r\n')).toString('latin1');
  if (/\r\nApi-Key:/i.test(head)) return bytes;
  return Buffer.concat([bytes.subarray(0, eol + 2), Buffer.from(`Api-Key: ${apiKey}\r\nContent-Type: application/json\r\n`), bytes.subarray(eol + 2)]);
}
