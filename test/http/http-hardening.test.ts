// The HTTP boundary under hostile input, over real HTTP: requests node's parser refuses, a missing Host, long
// person_ids, deep or value-heavy JSON, corrupt images, slow clients (timeouts), native errors with their own
// status, overload (503 + Retry-After), and BMP decoding off the event loop. Every refusal is {code, message}
// with a Request-Id.
import net from 'node:net';
import sharp from 'sharp';
import t, { type Test } from 'tap';
import { createEngine } from '../../src/engine';
import type { AnalyzeOptions, FaceAnalysis, RgbImage } from '../../src/engine/types';
import { decodeBmp } from '../../src/image/bmp';
import { decodeImageBytes, ImageDecodeError } from '../../src/image/decode';
import { startTestApp, BOOTSTRAP_KEY, type TestAppOptions } from '../helpers/app';
import { FakeEngine, fakePhoto } from '../helpers/fake-engine';
import { bmpFile, buildRequest, sendRaw, type RawResponse } from '../helpers/hostile-requests';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const KEY: [string, string] = ['Api-Key', BOOTSTRAP_KEY];
const JSON_TYPE: [string, string] = ['Content-Type', 'application/json'];

async function listening(t: Test, opts: TestAppOptions = {}) {
  const a = await startTestApp(opts);
  t.teardown(() => a.close());
  const address = await a.app.listen({ host: '127.0.0.1', port: 0 });
  const port = Number(new URL(address).port);
  const raw = async (bytes: Buffer | string, timeoutMs = 10_000): Promise<RawResponse> => {
    const outcome = await sendRaw('127.0.0.1', port, { kind: 'test', bytes: Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, 'latin1') }, timeoutMs);
    if (outcome.kind !== 'response') throw new Error(`no response: ${outcome.kind}`);
    return outcome.response;
  };
  return { ...a, address, port, raw };
}

function isApiError(t: Test, r: RawResponse, status: number, code: string, name: string) {
  t.equal(r.status, status, `${name}: status`);
  t.match(r.headers['request-id']?.[0] ?? '', UUID, `${name}: Request-Id`);
  t.equal(r.headers['content-type']?.[0], 'application/json', `${name}: JSON`);
  const body = JSON.parse(r.body.toString('utf8'));
  t.same(Object.keys(body).sort(), ['code', 'message'], `${name}: exactly {code, message}`);
  t.equal(body.code, code, `${name}: code`);
}

t.test("requests node's parser refuses: 400/431 R_002 with Request-Id, connection closed", async (t) => {
  const s = await listening(t);
  const cases: [string, string, number][] = [
    ['bad method', 'GE T / HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['space in the path', 'GET /person/face/a b HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['control character in the path', 'GET /person/face/a\x01b HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['Content-Length with Transfer-Encoding', 'POST /person/recognize-face HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
    ['two Content-Lengths', 'POST /person/recognize-face HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}', 400],
    ['folded header', 'GET /person/face/abc HTTP/1.1\r\nHost: x\r\nApi-Key: abc\r\n def\r\n\r\n', 400],
    ['bad chunk', `POST /person/recognize-face HTTP/1.1\r\nHost: x\r\nApi-Key: ${BOOTSTRAP_KEY}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`, 400],
    ['HTTP/2 preface on HTTP/1', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 400],
    ['headers over the limit', `GET /person/face/abc HTTP/1.1\r\nHost: x\r\nX-A: ${'a'.repeat(20000)}\r\n\r\n`, 431],
  ];
  for (const [name, request, status] of cases) {
    const r = await s.raw(request);
    isApiError(t, r, status, 'R_002', name);
    t.equal(r.headers.connection?.[0], 'close', `${name}: connection closed`);
  }
  // The server answers normally afterwards.
  isApiError(t, await s.raw(`GET /person/face/abc HTTP/1.1\r\nHost: x\r\nApi-Key: ${BOOTSTRAP_KEY}\r\nConnection: close\r\n\r\n`), 404, 'NF_001', 'after');
});

t.test('no Host on HTTP/1.1: 400 R_002; HTTP/1.0 needs none; CONNECT and Expect get the API body too', async (t) => {
  const s = await listening(t);
  isApiError(t, await s.raw(buildRequest({ method: 'GET', path: '/person/face/abc', host: null, headers: [KEY] })), 400, 'R_002', 'no Host');
  isApiError(t, await s.raw(buildRequest({ method: 'GET', path: '/person/face/abc', host: null, version: 'HTTP/1.0', headers: [KEY] })), 404, 'NF_001', 'HTTP/1.0');
  isApiError(t, await s.raw('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'), 405, 'METHOD_NOT_ALLOWED', 'CONNECT');
  isApiError(t, await s.raw(buildRequest({ method: 'POST', path: '/person/recognize-face', headers: [KEY, JSON_TYPE, ['Expect', 'teapot']], body: '{}' })), 417, 'R_002', 'Expect');
});

t.test('any over-long or bad person_id is R_003, on every method', async (t) => {
  const s = await listening(t);
  const body = JSON.stringify({ faceImage: (await fakePhoto({ identity: 1 })).toString('base64') });
  for (const length of [65, 100, 101, 150, 200, 5000]) {
    const id = 'a'.repeat(length);
    for (const method of ['GET', 'DELETE', 'POST', 'PUT']) {
      const withBody = method === 'POST' || method === 'PUT';
      const r = await s.raw(buildRequest({ method, path: `/person/face/${id}`, headers: [KEY, JSON_TYPE], body: withBody ? body : undefined }));
      isApiError(t, r, 400, 'R_003', `${method} id of ${length}`);
    }
    isApiError(t, await s.raw(buildRequest({ method: 'POST', path: `/person/verify-face/${id}`, headers: [KEY, JSON_TYPE], body })), 400, 'R_003', `verify id of ${length}`);
  }
  isApiError(t, await s.raw(buildRequest({ method: 'GET', path: '/person/face/%G1', headers: [KEY] })), 400, 'R_003', 'broken escape');
  isApiError(t, await s.raw(buildRequest({ method: 'GET', path: '/person/face/a%00b', headers: [KEY] })), 400, 'R_003', 'NUL escape');
  isApiError(t, await s.raw(buildRequest({ method: 'GET', path: '/person/face/a'.padEnd(80, 'a'), headers: [['Api-Key', 'wrong']] })), 401, 'UNAUTHORIZED', 'auth still first');
});

t.test('JSON bodies: deep nesting and value floods are R_002 before parsing; shallow wrong types stay R_003', async (t) => {
  const s = await listening(t);
  const post = (body: string, path = '/person/recognize-face') => s.raw(buildRequest({ method: 'POST', path, headers: [KEY, JSON_TYPE], body }));
  isApiError(t, await post('['.repeat(2_000_000)), 400, 'R_002', '2 MB of [');
  isApiError(t, await post(`{"faceImage":${'{"a":'.repeat(400_000)}1${'}'.repeat(400_000)}}`, '/person/face/deep'), 400, 'R_002', 'deep object in faceImage');
  isApiError(t, await post(`{"faceImage":[${'1,'.repeat(500_000)}1]}`), 400, 'R_002', 'half a million values');
  isApiError(t, await post('{"faceImage":{"a":{"b":[1]}}}'), 400, 'R_003', 'shallow object: a wrong type');
  isApiError(t, await post('{"faceImage":"\\"[[[[[[[[[[[[[[[[[[[[[[[\\\\"}'), 400, 'R_003', 'brackets inside a string do not count');
  isApiError(t, await post('{"faceImage":"abc",}'), 400, 'R_002', 'unparsable');
  t.equal(s.engine instanceof FakeEngine ? s.engine.calls : -1, 0, 'nothing reached the engine');
});

/** A JPEG of noise, so its scan data is long enough to damage in the middle. */
async function noiseJpeg(): Promise<Buffer> {
  const raw = Buffer.alloc(256 * 256 * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 2654435761) >>> 24;
  return sharp(raw, { raw: { width: 256, height: 256, channels: 3 } }).jpeg({ quality: 90 }).toBuffer();
}

t.test('corrupt images are R_003 for enrolment and for probes; intact ones pass', async (t) => {
  const s = await listening(t);
  const jpeg = await noiseJpeg();
  let sos = jpeg.indexOf(Buffer.from([0xff, 0xda]));
  t.ok(sos > 0);
  sos += 20;
  const flipped = Buffer.from(jpeg);
  for (let k = 0; k < 400; k++) flipped[sos + Math.floor(((jpeg.length - sos - 10) * k) / 400)] ^= 1 << (k % 8);
  const cut = Buffer.concat([jpeg.subarray(0, Math.floor(jpeg.length / 2)), Buffer.from([0xff, 0xd9])]);
  const lying = Buffer.from(jpeg);
  for (let i = 2; i < lying.length - 9; i++) {
    if (lying[i] === 0xff && lying[i + 1] === 0xc0) {
      lying.writeUInt16BE(7000, i + 5);
      lying.writeUInt16BE(7000, i + 7);
      break;
    }
  }
  const bmpLying = bmpFile(64, 64, 24, () => 9);
  bmpLying.writeInt32LE(7000, 18);
  const bomb = bmpFile(8, 8, 1, () => 0);
  bomb.writeInt32LE(100_000, 18);
  bomb.writeInt32LE(100_000, 22);
  const cases: [string, Buffer][] = [['bit-flipped scan data', flipped], ['cut at 50 % with an end marker', cut],
    ['header claims 7000x7000', lying], ['BMP claims more rows than it holds', bmpLying], ['BMP of 10^10 pixels', bomb]];
  for (const [name, file] of cases) {
    const faceImage = file.toString('base64');
    const post = (path: string, body: object) => s.raw(buildRequest({ method: 'POST', path, headers: [KEY, JSON_TYPE], body: JSON.stringify(body) }));
    isApiError(t, await post('/person/face/corrupt', { faceImage }), 400, 'R_003', `enrol: ${name}`);
    isApiError(t, await post('/person/recognize-face', { faceImage }), 400, 'R_003', `identify: ${name}`);
    isApiError(t, await post('/person/compare-face', { targetImage: jpeg.toString('base64'), sourceImage: faceImage }), 400, 'R_003', `compare: ${name}`);
  }
  const ok = await s.raw(buildRequest({ method: 'POST', path: '/person/face/intact', headers: [KEY, JSON_TYPE], body: JSON.stringify({ faceImage: jpeg.toString('base64') }) }));
  t.equal(ok.status, 200, 'the intact JPEG enrols');
  const bmp = await s.raw(buildRequest({ method: 'POST', path: '/person/face/intact-bmp', headers: [KEY, JSON_TYPE], body: JSON.stringify({ faceImage: bmpFile(256, 200, 1, (x) => x * 4).toString('base64') }) }));
  t.equal(bmp.status, 200, 'an intact 1-bit BMP enrols');
});

/** Opens a connection, sends the bytes, and waits for the first response (or the close). */
function partial(port: number, bytes: string): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (c) => { text += c.toString('latin1'); });
    socket.on('close', () => resolve({ text, closed: true }));
    socket.on('error', () => undefined);
    socket.write(bytes);
  });
}

t.test('timeouts: a body or headers that stop coming get 408 R_002 with Request-Id, and the connection is closed', async (t) => {
  const s = await listening(t, { tune: (c) => { c.server.request_timeout_ms = 800; c.server.headers_timeout_ms = 500; } });
  const body = await partial(s.port, `POST /person/recognize-face HTTP/1.1\r\nHost: x\r\nApi-Key: ${BOOTSTRAP_KEY}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"faceImage":"QUJD`);
  t.match(body.text, /^HTTP\/1\.1 408 /, 'partial body: 408');
  t.match(body.text, /\r\nRequest-Id: [0-9a-f-]{36}\r\n/);
  t.match(body.text, /\r\n\r\n\{"code":"R_002","message":"Request body exception"\}$/);
  const headers = await partial(s.port, `GET /person/face/abc HTTP/1.1\r\nHost: x\r\nApi-Key: ${BOOTSTRAP_KEY}\r\n`);
  t.match(headers.text, /^HTTP\/1\.1 408 /, 'partial headers: 408');
  t.match(headers.text, /\{"code":"R_002","message":"Request body exception"\}$/);
  isApiError(t, await s.raw(buildRequest({ method: 'GET', path: '/person/face/abc', headers: [KEY] })), 404, 'NF_001', 'a prompt request is served');
});

t.test('a native error keeps its table row: a closed engine answers 503 SERVICE_UNAVAILABLE, not 500', async (t) => {
  const engine = await createEngine();
  await engine.close();
  const s = await listening(t, { engine });
  const photo = (await fakePhoto({ identity: 1 })).toString('base64');
  const r = await s.raw(buildRequest({ method: 'POST', path: '/person/recognize-face', headers: [KEY, JSON_TYPE], body: JSON.stringify({ faceImage: photo }) }));
  isApiError(t, r, 503, 'SERVICE_UNAVAILABLE', 'closed engine');
});

/** A fake engine whose analyses wait until released, counting them like the native engine's `pending`. */
class GatedEngine extends FakeEngine {
  pending = 0;
  private open!: () => void;
  private readonly gate = new Promise<void>((resolve) => { this.open = resolve; });
  override async analyze(image: RgbImage, options?: AnalyzeOptions): Promise<FaceAnalysis[]> {
    this.pending++;
    try {
      await this.gate;
      return await super.analyze(image, options);
    } finally {
      this.pending--;
    }
  }
  release(): void {
    this.open();
  }
}

t.test('overload: over [server] max_engine_queue, face analyses get 503 + Retry-After at once; other routes and 401 do not', async (t) => {
  const engine = new GatedEngine();
  const s = await listening(t, { engine, tune: (c) => { c.server.max_engine_queue = 2; } });
  const photo = (await fakePhoto({ identity: 7 })).toString('base64');
  const identify = () => fetch(`${s.address}/person/recognize-face`, {
    method: 'POST', headers: { 'api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ faceImage: photo }),
  });
  const first = [identify(), identify()];
  while (engine.pending < 2) await new Promise((r) => setTimeout(r, 10));
  const refused = await identify();
  t.equal(refused.status, 503);
  t.equal(refused.headers.get('retry-after'), '1');
  t.match(refused.headers.get('request-id') ?? '', UUID);
  t.same(await refused.json(), { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable' });
  const get = await fetch(`${s.address}/person/face/nobody`, { headers: { 'api-key': BOOTSTRAP_KEY } });
  t.equal(get.status, 404, 'GET person is not refused by the engine bound');
  const anonymous = await fetch(`${s.address}/person/recognize-face`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.equal(anonymous.status, 401, 'an unauthenticated request is 401, not 503');
  engine.release();
  for (const r of await Promise.all(first)) t.equal(r.status, 410, 'the admitted requests complete (nobody enrolled: RF_001)');
  t.equal((await identify()).status, 410, 'admitted again once the queue is short');
});

t.test('overload: a stalled event loop gets 503 + Retry-After until it recovers', async (t) => {
  const s = await listening(t, { tune: (c) => { c.server.max_event_loop_delay_ms = 100; } });
  const get = () => fetch(`${s.address}/person/face/nobody`, { headers: { 'api-key': BOOTSTRAP_KEY } });
  // Served while the loop keeps time (a loaded test machine may hiccup past 100 ms once: wait it out).
  let before = 0;
  for (let i = 0; i < 40 && before !== 404; i++) {
    before = (await get()).status;
    if (before !== 404) await new Promise((res) => setTimeout(res, 50));
  }
  t.equal(before, 404);
  // The delay monitor measures between its own ticks: give it a first one before the stall.
  await new Promise((res) => setTimeout(res, 100));
  const until = Date.now() + 600;
  while (Date.now() < until) { /* the stall: this process is the server's */ }
  let refused: Response | undefined;
  for (let i = 0; i < 40 && !refused; i++) {
    const r = await get();
    if (r.status === 503) refused = r;
    else await new Promise((res) => setTimeout(res, 25));
  }
  t.ok(refused, 'a request after the stall is refused');
  t.equal(refused?.headers.get('retry-after'), '1');
  t.same(await refused?.json(), { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable' });
  let served = false;
  for (let i = 0; i < 60 && !served; i++) {
    served = (await get()).status === 404;
    if (!served) await new Promise((res) => setTimeout(res, 50));
  }
  t.ok(served, 'served again once the loop keeps time');
});

t.test('a 50-megapixel BMP decodes in a worker: the event loop keeps running, the pixels are the same', async (t) => {
  const width = 10_000;
  const height = 5_000;
  const big = bmpFile(width, height, 1, (x, y) => ((x >> 4) ^ (y >> 4)) & 1 ? 255 : 0);
  const order: string[] = [];
  let ticks = 0;
  const timer = setInterval(() => { ticks++; }, 5);
  setTimeout(() => order.push('timer'), 0);
  const decoding = decodeImageBytes('faceImage', big, { maxBytes: 16 << 20, maxPixels: 50_000_000, strict: true }).then((rgb) => {
    order.push('decoded');
    return rgb;
  });
  const rgb = await decoding;
  clearInterval(timer);
  t.same(order, ['timer', 'decoded'], 'a timer due during the decode fired before it finished');
  t.ok(ticks >= 3, `the loop kept ticking during the decode (${ticks} ticks)`);
  t.same([rgb.width, rgb.height], [width / 2, height / 2], 'decoded at half size (over BMP_ANALYSIS_PIXELS)');
  const small = bmpFile(37, 23, 1, (x, y) => (x * y) % 2 ? 255 : 0);
  const viaWorker = await decodeImageBytes('faceImage', small, { maxBytes: 1 << 20, maxPixels: 1 << 20 });
  t.same(Buffer.from(viaWorker.data), Buffer.from(decodeBmp(small, 1 << 20).data), 'the worker decodes exactly as the in-thread decoder');
  await t.rejects(decodeImageBytes('faceImage', big, { maxBytes: 16 << 20, maxPixels: 49_999_999 }), ImageDecodeError, 'the pixel bound applies before decoding');
});
