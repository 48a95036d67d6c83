// Ini loading: every key with its default, unknown sections/keys and bad values stop start-up
// with a message naming the key, relative paths follow the ini file.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ConfigError, defaultConfig, loadConfig, parseConfig } from '../../src/config/load';
import { configSchema } from '../../src/config/schema';
import { main } from '../../src/cli/main';

const root = path.resolve(__dirname, '..', '..');
// The sections of the person API; [camera] and [liveness] belong to device mode (docs/device.md).
const PERSON_API_SECTIONS = ['server', 'storage', 'auth', 'matching', 'image', 'quality', 'quota'] as const;

t.test('defaults', async (t) => {
  const c = defaultConfig('/srv');
  t.same(c.server, {
    mode: 'cloud', host: '127.0.0.1', port: 8080, body_limit_bytes: 24 * 1024 * 1024,
    request_timeout_ms: 30_000, headers_timeout_ms: 10_000, keep_alive_timeout_ms: 5_000, idle_timeout_ms: 120_000,
    drain_timeout_ms: 10_000, max_event_loop_delay_ms: 1_000, max_engine_queue: 64, trust_proxy: '',
  });
  t.equal(c.storage.path, '/srv/data');
  t.equal(c.auth.bootstrap_key, '');
  t.same(c.matching, { identify_threshold: 98, verify_threshold: 80, compare_threshold: 80, duplicate_threshold: 98 });
  t.same(c.image, { max_bytes: 8 * 1024 * 1024, max_pixels: 50_000_000, max_pixels_in_flight: 150_000_000 });
  t.equal(c.quality.min_face_size, 80);
  t.equal(c.quality.max_yaw, 30);
  t.equal(c.quality.max_pitch, 30);
  t.equal(c.quality.max_roll, 20);
  t.equal(c.quality.min_brightness, 60);
  t.equal(c.quality.max_brightness, 200);
  t.equal(c.quality.min_sharpness, 40);
  t.equal(c.quality.min_eye_openness, 0.3); // the mean of both eyes
  t.equal(c.quality.max_mouth_openness, 0.2);
  t.equal(c.quality.max_sunglasses, 0.5);
  t.equal(c.quality.background_face_ratio, 0.5);
  t.equal(c.camera.source, 'none');
  t.equal(c.quota.requests_per_day, 0);
});

t.test('config/default.ini: device mode with the synthetic camera, 127.0.0.1:8080, storage in the repository data/ folder', async (t) => {
  const c = loadConfig(path.join(root, 'config', 'default.ini'));
  t.equal(c.server.mode, 'device');
  t.equal(c.camera.source, 'synthetic');
  t.equal(c.server.host, '127.0.0.1');
  t.equal(c.server.port, 8080);
  t.equal(c.storage.path, path.join(root, 'data'));
  // The file spells out the person-API keys with their built-in defaults.
  const d = defaultConfig(path.join(root, 'config'));
  // ... except [server] mode: the file runs device mode (the schema default is cloud).
  for (const section of PERSON_API_SECTIONS) {
    if (section !== 'storage') t.same(section === 'server' ? { ...c.server, mode: d.server.mode } : c[section], d[section], `[${section}]`);
  }
});

t.test('config/default.ini lists every person-API key', async (t) => {
  const text = fs.readFileSync(path.join(root, 'config', 'default.ini'), 'utf8');
  for (const section of PERSON_API_SECTIONS) {
    const keys = configSchema[section];
    t.match(text, new RegExp(`^\\[${section}\\]`, 'm'), `[${section}]`);
    for (const key of Object.keys(keys)) t.match(text, new RegExp(`^${key} =`, 'm'), `[${section}] ${key}`);
  }
});

t.test('values are parsed and typed', async (t) => {
  const c = parseConfig(
    '[server]\nmode = device\nport = 0\n[matching]\nidentify_threshold = 97.5\n[quota]\nrequests_per_day = 10\n' +
    '[camera]\nsource = synthetic\n[storage]\npath = /abs/db\n[auth]\nbootstrap_key = 0123456789abcdef\n',
    '/x',
  );
  t.equal(c.server.mode, 'device');
  t.equal(c.server.port, 0);
  t.equal(c.matching.identify_threshold, 97.5);
  t.equal(c.quota.requests_per_day, 10);
  t.equal(c.camera.source, 'synthetic');
  t.equal(c.storage.path, '/abs/db');
  t.equal(c.auth.bootstrap_key, '0123456789abcdef');
});

t.test('relative storage path resolves against the ini file folder', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fc-conf-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'my.ini');
  fs.writeFileSync(file, '[storage]\npath = ./db\n');
  t.equal(loadConfig(file).storage.path, path.join(dir, 'db'));
});

const bad: [string, string][] = [
  ['[server]\nmode = edge\n', '[server] mode'],
  ['[server]\nport = 70000\n', '[server] port'],
  ['[server]\nport = 80.5\n', '[server] port'],
  ['[server]\nport = abc\n', '[server] port'],
  ['[server]\nhost =\n', '[server] host'],
  ['[server]\nbody_limit_bytes = 10\n', '[server] body_limit_bytes'],
  ['[server]\nprot = 8080\n', '[server] prot'],
  ['[servr]\nport = 8080\n', '[servr]'],
  ['port = 8080\n', 'port'],
  ['[matching]\nidentify_threshold = 101\n', '[matching] identify_threshold'],
  ['[matching]\nverify_threshold = high\n', '[matching] verify_threshold'],
  ['[image]\nmax_bytes = 0\n', '[image] max_bytes'],
  ['[image]\nmax_pixels = -5\n', '[image] max_pixels'],
  ['[quality]\nmin_eye_openness = 2\n', '[quality] min_eye_openness'],
  ['[quality]\nmin_brightness = 210\n', '[quality] min_brightness'],
  ['[quality]\nsmile = 1\n', '[quality] smile'],
  ['[camera]\nsource = web cam\n', '[camera] source'],
  ['[quota]\nrequests_per_day = -1\n', '[quota] requests_per_day'],
  ['[auth]\nbootstrap_key = short\n', '[auth] bootstrap_key'],
  ['[server]\nport[] = 1\n', '[server] port'],
  ['[server.tls]\ncert = x\n', '[server.tls]'],
  ['[storage]\nbackend = mysql\n', '[storage] backend'],
  ['[server]\nmode = device\n[storage]\nbackend = postgres\npostgres_url = postgres://u@h/db\nkey_file = /k\n', '[storage] backend'],
  ['[server]\nmode = cloud\n[storage]\nbackend = postgres\nkey_file = /k\n', '[storage] postgres_url'],
  ['[server]\nmode = cloud\n[storage]\nbackend = postgres\npostgres_url = postgres://u@h/db\n', '[storage] key_file'],
  ['[storage]\npostgres_pool_size = 0\n', '[storage] postgres_pool_size'],
];
for (const [text, key] of bad) {
  t.test(`bad: ${JSON.stringify(text)} names ${key}`, async (t) => {
    const err = t.throws(() => parseConfig(text, '/x', 'f.ini')) as ConfigError;
    t.type(err, ConfigError);
    t.equal(err.key, key);
    t.match(err.message, `f.ini: ${key}`);
  });
}

t.test('[storage] backend = postgres on a cloud node: the database settings are read', async (t) => {
  const c = parseConfig('[server]\nmode = cloud\n[storage]\nbackend = postgres\npostgres_url = postgres://fc@db:5432/fc\n' +
    'key_file = keys/node.key\npostgres_pool_size = 4\npostgres_statement_timeout_ms = 2000\npostgres_connect_timeout_ms = 500\n', '/etc/fc');
  t.same([c.storage.backend, c.storage.postgres_url, c.storage.postgres_pool_size, c.storage.postgres_statement_timeout_ms,
    c.storage.postgres_connect_timeout_ms, c.storage.key_file], ['postgres', 'postgres://fc@db:5432/fc', 4, 2000, 500, '/etc/fc/keys/node.key']);
  t.equal(parseConfig('', '/x').storage.backend, 'lmdb', 'LMDB by default');
});

t.test('a device refuses the postgres backend with exit 78 and the reason', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fc-cfg-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = path.join(dir, 'device.ini');
  fs.writeFileSync(ini, '[server]\nmode = device\n[storage]\nbackend = postgres\npostgres_url = postgres://u@127.0.0.1:1/db\nkey_file = k\n');
  const err: string[] = [];
  const code = await main(['serve', '--config', ini], { out: () => undefined, err: (l) => err.push(l) });
  t.equal(code, 78);
  t.match(err.join('\n'), /\[storage\] backend: postgres is for cloud nodes only/);
});

t.test('a missing file is a ConfigError', async (t) => {
  t.throws(() => loadConfig('/nonexistent/face-check.ini'), ConfigError);
});
