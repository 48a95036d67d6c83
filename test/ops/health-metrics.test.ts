// The operator's probes and metrics (app.inject): /health/live answers whatever the state and load;
// /health/ready says 503 with the reason while the store is closed, the licence is not in force or the
// device's camera is disconnected; /metrics is served by [metrics] access (loopback, key, off) and its
// families count what happened, with no person id or key in any label.
import t from 'tap';
import type { LiveFaceSource } from '../../src/services';
import type { CameraEvent, CameraStatus, FrameEvent } from '../../src/device/native-camera';
import type { LicenceStatus } from '../../src/licensing/device/device-licence';
import { BOOTSTRAP_KEY, startTestApp, type TestApp, type TestAppOptions } from '../helpers/app';
import { FakeEngine, fakePhotoB64 } from '../helpers/fake-engine';

type Sample = { name: string; labels: Record<string, string>; value: number };

/** The samples of a Prometheus text exposition. */
function samples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the one sample with these labels (undefined when there is none). */
function value(all: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const hit = all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hit.length > 1) throw new Error(`${hit.length} samples of ${name} ${JSON.stringify(labels)}`);
  return hit[0]?.value;
}

async function scrape(a: TestApp): Promise<Sample[]> {
  const res = await a.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
  if (res.statusCode !== 200) throw new Error(`/metrics: ${res.statusCode} ${res.body}`);
  return samples(res.body);
}

async function app(t: { teardown(fn: () => unknown): void }, opts: TestAppOptions = {}): Promise<TestApp> {
  const a = await startTestApp(opts);
  t.teardown(() => a.close());
  return a;
}

/** A licence whose status the test sets (src/licensing/device/device-licence.ts's shape). */
function stubLicence(status: Pick<LicenceStatus, 'state' | 'lastCheck'>) {
  return {
    current: status,
    allows: () => ({ ok: true as const }),
    record: () => undefined,
    limits: () => undefined,
    status() { return this.current; },
  };
}

function stubCamera(connected: { now: boolean }): LiveFaceSource {
  return { connected: () => connected.now, latest: async () => null };
}

const device = (c: TestApp['config']) => { c.server.mode = 'device'; };

t.test('live: 200 without a key, with no data', async (t) => {
  const a = await app(t);
  const res = await a.app.inject({ method: 'GET', url: '/health/live' });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { status: 'live' });
  t.ok(res.headers['request-id'], 'the request still gets its Request-Id');
});

t.test('ready: 200 with every check passing; 503 with the reason once the store is closed', async (t) => {
  const a = await startTestApp();
  t.teardown(async () => { await a.app.close(); });
  const ok = await a.app.inject({ method: 'GET', url: '/health/ready' });
  t.equal(ok.statusCode, 200);
  t.same(ok.json(), { status: 'ready', checks: { engine: 'ok', store: 'ok', licence: 'not used', camera: 'not used' } });
  await a.store.close();
  const closed = await a.app.inject({ method: 'GET', url: '/health/ready' });
  t.equal(closed.statusCode, 503);
  t.same(closed.json().reasons, ['the store is not open']);
  t.equal(closed.json().checks.store, 'the store is not open');
});

t.test('ready (device): 503 while the licence is refused, lapsed or unchecked; 200 once licensed', async (t) => {
  const licence = stubLicence({ state: 'refused' });
  const a = await app(t, { tune: device, deps: { licence } });
  const refused = await a.app.inject({ method: 'GET', url: '/health/ready' });
  t.equal(refused.statusCode, 503);
  t.same(refused.json().reasons, ['the licence server refused the licence']);
  licence.current = { state: 'lapsed' };
  t.match((await a.app.inject({ method: 'GET', url: '/health/ready' })).json().reasons, [/could not be checked/]);
  licence.current = { state: 'starting' };
  t.equal((await a.app.inject({ method: 'GET', url: '/health/ready' })).statusCode, 503);
  licence.current = { state: 'licensed' };
  const ok = await a.app.inject({ method: 'GET', url: '/health/ready' });
  t.equal(ok.statusCode, 200);
  t.equal(ok.json().checks.licence, 'ok');
  t.equal((await a.app.inject({ method: 'GET', url: '/health/live' })).statusCode, 200, 'live whatever the licence');
});

t.test('ready (device): 503 while the camera is disconnected', async (t) => {
  const connected = { now: false };
  const a = await app(t, { tune: device, deps: { camera: stubCamera(connected) } });
  const down = await a.app.inject({ method: 'GET', url: '/health/ready' });
  t.equal(down.statusCode, 503);
  t.same(down.json().reasons, ['the camera is not connected']);
  connected.now = true;
  const up = await a.app.inject({ method: 'GET', url: '/health/ready' });
  t.equal(up.statusCode, 200);
  t.equal(up.json().checks.camera, 'ok');
});

t.test('ready (device): the camera SDK\'s reason is given, without the paths it names', async (t) => {
  const camera: LiveFaceSource = {
    connected: () => false, latest: async () => null,
    lastError: () => 'cannot play /var/lib/face-check/session.bag: rs2_context_add_device: Failed to create ros reader (lib=/opt/rs/librealsense2.so.2)',
  };
  const a = await app(t, { tune: device, deps: { camera } });
  const down = await a.app.inject({ method: 'GET', url: '/health/ready' });
  t.equal(down.statusCode, 503);
  t.same(down.json().reasons, ['the camera is not connected: cannot play <path>: rs2_context_add_device: Failed to create ros reader (lib=<path>)']);
});

t.test('under event-loop overload live still answers, ready is shed with the reason', async (t) => {
  const a = await app(t, { tune: (c) => { c.server.max_event_loop_delay_ms = 1; } });
  // The delay monitor measures between its own ticks: give it a first one, stall, then poll until the
  // shedding refuses the API (a loaded machine may take a few ticks to record the stall).
  await new Promise((r) => setTimeout(r, 100));
  const until = Date.now() + 600;
  while (Date.now() < until) { /* the stall: this process is the server's */ }
  let api = 0;
  for (let i = 0; i < 40 && api !== 503; i++) {
    api = (await a.call({ method: 'GET', url: '/person/face/alice' })).statusCode;
    if (api !== 503) await new Promise((r) => setTimeout(r, 25));
  }
  t.equal(api, 503, 'the API is shed');
  const live = await a.app.inject({ method: 'GET', url: '/health/live' });
  const ready = await a.app.inject({ method: 'GET', url: '/health/ready' });
  t.equal(live.statusCode, 200, 'the live probe is not');
  t.equal(ready.statusCode, 503, 'ready is');
  t.equal(ready.json().code, 'SERVICE_UNAVAILABLE');
  t.equal(ready.headers['retry-after'], '1');
});

t.test('/metrics with access = loopback: loopback clients only; others get the 404 of an absent route', async (t) => {
  const a = await app(t);
  const local = await a.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
  t.equal(local.statusCode, 200);
  t.match(local.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  t.equal((await a.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '::1' })).statusCode, 200);
  const absent = await a.app.inject({ method: 'GET', url: '/no-such-route', remoteAddress: '10.0.0.5' });
  for (const [method, address] of [['GET', '10.0.0.5'], ['POST', '10.0.0.5'], ['POST', '127.0.0.1']] as const) {
    const res = await a.app.inject({ method, url: '/metrics', remoteAddress: address });
    t.equal(res.statusCode, 404, `${method} from ${address}`);
    t.same(res.json().code, absent.json().code);
    t.notOk(res.headers.allow, 'no Allow header betrays the route');
  }
  t.equal((await a.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.0.0.5', headers: { 'api-key': BOOTSTRAP_KEY } })).statusCode, 404,
    'a key does not open it');
});

t.test('/metrics with access = key: a full key (cloud: of account default), from anywhere', async (t) => {
  const a = await app(t, { tune: (c) => { c.metrics.access = 'key'; } });
  const from = { method: 'GET' as const, url: '/metrics', remoteAddress: '10.0.0.5' };
  t.equal((await a.app.inject(from)).statusCode, 401, 'no key');
  t.equal((await a.app.inject({ ...from, headers: { 'api-key': BOOTSTRAP_KEY } })).statusCode, 200, 'the bootstrap key');
  const enrol = await a.store.apiKeys.create('default', 'enrol', '', new Date().toISOString());
  t.equal((await a.app.inject({ ...from, headers: { 'api-key': enrol.key } })).statusCode, 403, 'role enrol');
  const tenant = await a.store.apiKeys.create('acme', 'full', '', new Date().toISOString());
  const other = await a.app.inject({ ...from, headers: { 'api-key': tenant.key } });
  t.equal(other.statusCode, 403, 'a full key of another account (cloud)');
  t.match(other.json().message, /every account/);
});

t.test('/metrics with access = key on a device: any full key', async (t) => {
  const a = await app(t, { tune: (c) => { device(c); c.metrics.access = 'key'; } });
  const owner = await a.store.apiKeys.create('acme', 'full', '', new Date().toISOString());
  t.equal((await a.app.inject({ method: 'GET', url: '/metrics', headers: { 'api-key': owner.key } })).statusCode, 200);
});

t.test('/metrics with access = off: 404 for everyone, like an absent route', async (t) => {
  const a = await app(t, { tune: (c) => { c.metrics.access = 'off'; } });
  for (const method of ['GET', 'POST'] as const) {
    const res = await a.app.inject({ method, url: '/metrics', remoteAddress: '127.0.0.1', headers: { 'api-key': BOOTSTRAP_KEY } });
    t.equal(res.statusCode, 404, method);
  }
  t.equal((await a.app.inject({ method: 'GET', url: '/health/live' })).statusCode, 200, 'the probes stay');
});

t.test('the metric families count requests, engine stages, index sizes and quota; no label names a person or a key', async (t) => {
  const engine = new FakeEngine();
  const a = await app(t, { engine, tune: (c) => { c.quota.requests_per_day = 1000; } });
  const acme = await a.store.apiKeys.create('acme', 'full', '', new Date().toISOString());
  const img = (identity: number) => fakePhotoB64({ identity });
  for (const [id, identity] of [['alice-person', 1], ['bob-person', 2]] as const) {
    t.equal((await a.call({ method: 'POST', url: `/person/face/${id}`, payload: { faceImage: await img(identity) } })).statusCode, 200);
  }
  t.equal((await a.call({ method: 'POST', url: '/person/face/carol-person', key: acme.key, payload: { faceImage: await img(3) } })).statusCode, 200);
  t.equal((await a.call({ method: 'GET', url: '/person/face/alice-person' })).statusCode, 200);
  t.equal((await a.call({ method: 'GET', url: '/person/face/nobody-person' })).statusCode, 404);
  t.equal((await a.call({ method: 'POST', url: '/person/recognize-face', payload: { faceImage: await img(1) } })).statusCode, 200);
  t.equal((await a.call({ method: 'GET', url: '/person/face/alice-person/extra' })).statusCode, 404);
  t.equal((await a.call({ method: 'GET', url: '/person/face/alice-person', key: 'wrong-key-0123456789' })).statusCode, 401);

  const m = await scrape(a);
  const person = '/person/face/:person_id';
  const requests = 'face_check_http_requests_total';
  t.equal(value(m, requests, { method: 'POST', route: person, status_code: '200' }), 3, 'enrolments');
  t.equal(value(m, requests, { method: 'GET', route: person, status_code: '200' }), 1);
  t.equal(value(m, requests, { method: 'GET', route: person, status_code: '404' }), 1);
  t.equal(value(m, requests, { method: 'GET', route: person, status_code: '401' }), 1, 'refused requests count too');
  t.equal(value(m, requests, { method: 'POST', route: '/person/recognize-face', status_code: '200' }), 1);
  t.equal(value(m, requests, { method: 'GET', route: 'unmatched', status_code: '404' }), 1, 'an unknown path is "unmatched"');
  t.equal(value(m, 'face_check_http_request_duration_seconds_count', { method: 'POST', route: person }), 3, 'latency histogram');
  t.ok(value(m, 'face_check_http_request_duration_seconds_bucket', { method: 'POST', route: person, le: '+Inf' }) === 3);

  t.equal(value(m, 'face_check_engine_stage_seconds_count', { stage: 'total' }), engine.calls, 'one observation per analysis');
  t.ok(engine.calls >= 4);

  t.equal(value(m, 'face_check_index_persons', { account: 'default' }), 2);
  t.equal(value(m, 'face_check_index_persons', { account: 'acme' }), 1);
  // Metered: get (both), identify; enrolments are not.
  t.equal(value(m, 'face_check_quota_used_today', { account: 'default' }), 3);
  t.equal(value(m, 'face_check_quota_used_today', { account: 'acme' }), 0);
  t.equal(value(m, 'face_check_quota_limit_per_day', { account: 'default' }), 1000);

  for (const name of ['face_check_event_loop_lag_max_seconds', 'face_check_event_loop_lag_p99_seconds', 'face_check_event_loop_lag_mean_seconds']) {
    const lag = value(m, name);
    t.ok(lag !== undefined && lag >= 0 && Number.isFinite(lag), `${name} = ${lag}`);
  }
  t.equal(m.filter((s) => s.name.startsWith('face_check_licence')).length, 0, 'no licence metrics without a licence');

  const secrets = ['alice-person', 'bob-person', 'carol-person', 'nobody-person', BOOTSTRAP_KEY, acme.key, 'wrong-key-0123456789'];
  const labelValues = m.flatMap((s) => Object.values(s.labels));
  for (const secret of secrets) t.notOk(labelValues.some((v) => v.includes(secret)), `no label holds ${secret.slice(0, 12)}...`);
  t.notOk(m.some((s) => !s.name.startsWith('face_check_')), 'every family is prefixed face_check_');

  // Counting goes on: one more enrolment shows in the next scrape.
  t.equal((await a.call({ method: 'POST', url: '/person/face/dave-person', payload: { faceImage: await img(4) } })).statusCode, 200);
  const again = await scrape(a);
  t.equal(value(again, requests, { method: 'POST', route: person, status_code: '200' }), 4);
  t.equal(value(again, 'face_check_index_persons', { account: 'default' }), 3);
});

t.test('licence metrics (device): the state, the last check and the last success', async (t) => {
  const at = '2030-05-01T12:00:00.000Z';
  const licence = stubLicence({ state: 'licensed', lastCheck: { at, outcome: 'ok' } });
  const a = await app(t, { tune: device, deps: { licence } });
  let m = await scrape(a);
  t.equal(value(m, 'face_check_licence_state', { state: 'licensed' }), 1);
  t.equal(value(m, 'face_check_licence_state', { state: 'refused' }), 0);
  t.equal(value(m, 'face_check_licence_last_success_timestamp_seconds'), Date.parse(at) / 1000);
  const later = '2030-05-01T13:00:00.000Z';
  licence.current = { state: 'refused', lastCheck: { at: later, outcome: 'refused' } };
  m = await scrape(a);
  t.equal(value(m, 'face_check_licence_state', { state: 'refused' }), 1);
  t.equal(value(m, 'face_check_licence_state', { state: 'licensed' }), 0);
  t.equal(value(m, 'face_check_licence_last_check_timestamp_seconds'), Date.parse(later) / 1000);
  t.equal(value(m, 'face_check_licence_last_success_timestamp_seconds'), Date.parse(at) / 1000, 'a refusal is not a success');
});

t.test('camera metrics (device): connected, frames per second, dropped frames, liveness decisions by outcome', async (t) => {
  const status = { connected: true, framesCaptured: 120, framesAnalysed: 100, framesDropped: 20, reportsDropped: 1, captureFps: 30, analyseFps: 25 };
  const listeners: ((e: CameraEvent) => void)[] = [];
  const camera = {
    connected: () => status.connected,
    latest: async () => null,
    status: () => status as unknown as CameraStatus,
    subscribe: (l: (e: CameraEvent) => void) => { listeners.push(l); return () => listeners.splice(listeners.indexOf(l), 1); },
  };
  const a = await app(t, { tune: device, deps: { camera } });
  t.equal(listeners.length, 1, 'the metrics listen to the frame reports');
  const frame = (live: boolean, face: boolean) => ({ type: 'frame', face, decision: { live, failed: live ? '' : 'flat' } }) as unknown as FrameEvent;
  for (const e of [frame(true, true), frame(true, true), frame(false, true), frame(false, false)]) listeners[0](e);
  listeners[0]({ type: 'status', ...status } as CameraEvent);
  const m = await scrape(a);
  t.equal(value(m, 'face_check_liveness_decisions_total', { outcome: 'live' }), 2);
  t.equal(value(m, 'face_check_liveness_decisions_total', { outcome: 'not_live' }), 1);
  t.equal(value(m, 'face_check_liveness_decisions_total', { outcome: 'no_face' }), 1);
  t.equal(value(m, 'face_check_camera_frames_dropped_total'), 20);
  t.equal(value(m, 'face_check_camera_frames_captured_total'), 120);
  t.equal(value(m, 'face_check_camera_frames_per_second', { stage: 'capture' }), 30);
  t.equal(value(m, 'face_check_camera_frames_per_second', { stage: 'analyse' }), 25);
  t.equal(value(m, 'face_check_camera_connected'), 1);
  status.connected = false;
  status.framesDropped = 35;
  const after = await scrape(a);
  t.equal(value(after, 'face_check_camera_connected'), 0);
  t.equal(value(after, 'face_check_camera_frames_dropped_total'), 35, 'the native total, read at each scrape');
  await a.app.close();
  t.equal(listeners.length, 0, 'closing the app stops listening');
});

t.test('event-loop lag: a stall shows in the next scrape, and each scrape starts a new window', async (t) => {
  const a = await app(t);
  await scrape(a);
  await new Promise((r) => setTimeout(r, 50));
  const until = Date.now() + 300;
  while (Date.now() < until) { /* the stall */ }
  await new Promise((r) => setTimeout(r, 30));
  const first = value(await scrape(a), 'face_check_event_loop_lag_max_seconds')!;
  t.ok(first >= 0.2, `the 300 ms stall is seen: ${first}`);
  const second = value(await scrape(a), 'face_check_event_loop_lag_max_seconds')!;
  t.ok(second < first, `the next window starts afresh: ${second}`);
});
