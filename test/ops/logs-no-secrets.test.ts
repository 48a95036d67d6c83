// The service log keeps no secret, even at [log] level = trace: the real start-up (src/start/start-service.ts) in a child
// process in cloud mode, driven through everything that carries one - an operator's registration, sign-in and
// a wrong password, an API key with a generated signing key and signed requests, an enrolment with a photo and
// an identification, a licence made with the CLI and its check - then every line it wrote is read: each is JSON,
// each line about a request carries that request's Request-Id, and no image (nor any 40 characters of it),
// template, API key, session token, password, private signing key or licence key is in any.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { main } from '../../src/cli/main';
import { BOOTSTRAP_KEY } from '../helpers/app';
import { fakePhotoB64, templateFor } from '../helpers/fake-engine';
import { startServiceProcess, writeIni } from '../helpers/service-process';
import { writeTinyTarball } from '../helpers/tiny-package';
import { freePort } from '../helpers/free-port';

/** The one-time messages the program prints to the console at start (the first API key): not log lines. */
const CONSOLE_MESSAGE = /^face-check: /;
const WINDOW = 40;

/** Every WINDOW-character piece of `text`, to find any part of it in a line. */
function windows(text: string): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i + WINDOW <= text.length; i++) out.add(text.slice(i, i + WINDOW));
  return out;
}

function holdsPieceOf(line: string, pieces: Set<string>): boolean {
  for (let i = 0; i + WINDOW <= line.length; i++) if (pieces.has(line.slice(i, i + WINDOW))) return true;
  return false;
}

t.test('at level trace no log line holds an image, template, key, token or password; each request line has its id', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-logs-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ini = writeIni(dir, ['[log]', 'level = trace', '[licensing]', `package_file = ${writeTinyTarball(dir)}`].join('\n'));
  const service = await startServiceProcess(ini, 'fake');
  let stopped = false;
  t.teardown(async () => { if (!stopped) await service.stop(); });
  const base = service.address;
  const requestIds: string[] = [];
  const call = async (method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) => {
    const res = await fetch(`${base}${url}`, {
      method, headers: { 'content-type': 'application/json', ...opts.headers },
      body: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
    });
    requestIds.push(res.headers.get('request-id') ?? '(none)');
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  // An operator registers, fails one sign-in, signs in, and makes a full key with a generated signing key.
  const email = 'logs-operator@example.com';
  const password = 'a secret passphrase 7421';
  const wrongPassword = 'the wrong passphrase 9913';
  const registered = await call('POST', '/account/v1/register', { body: { email, password } });
  t.equal(registered.status, 200, JSON.stringify(registered.body));
  const accountId: string = registered.body.account.accountId;
  const registrationKey: string = registered.body.apiKey.key;
  t.equal((await call('POST', '/account/v1/sessions', { body: { email, password: wrongPassword } })).status, 401);
  const session = await call('POST', '/account/v1/sessions', { body: { email, password } });
  t.equal(session.status, 200);
  const token: string = session.body.token;
  const created = await call('POST', '/account/v1/keys', { headers: { authorization: `Bearer ${token}` }, body: { role: 'full', signing: true } });
  t.equal(created.status, 200, JSON.stringify(created.body));
  const apiKey: string = created.body.key;
  const signingKey: string = created.body.signingKey;
  t.match(signingKey, /BEGIN PRIVATE KEY/);

  // Signed requests of that key: an enrolment with a photo, then an identification.
  const photo = await fakePhotoB64({ identity: 41 });
  const signatures: string[] = [];
  const signed = async (url: string, body: unknown) => {
    const text = JSON.stringify(body);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = crypto.sign('sha256', Buffer.from(`${base}${url}${text}${timestamp}`), signingKey).toString('base64');
    signatures.push(signature);
    return call('POST', url, { body: text, headers: { 'api-key': apiKey, signature, timestamp } });
  };
  t.equal((await signed('/person/face/logs-person', { faceImage: photo })).status, 200, 'signed enrolment');
  const identified = await signed('/person/recognize-face', { faceImage: photo });
  t.equal(identified.status, 200, 'signed identification');
  // The bootstrap key, unsigned, and a refused wrong key.
  t.equal((await call('GET', '/person/face/nobody', { headers: { 'api-key': BOOTSTRAP_KEY } })).status, 404);
  t.equal((await call('GET', '/person/face/nobody', { headers: { 'api-key': 'not-a-key-but-secret-looking-0001' } })).status, 401);

  // A licence made with the CLI against the running cloud's store, and its check with the licence server.
  const out: string[] = [];
  const code = await main(['licence', 'create', '--account', accountId, '--grants', 'identify', '--config', ini],
    { out: (l) => out.push(l), err: (l) => out.push(l) });
  t.equal(code, 0, out.join('\n'));
  const licenceKey = /licence key: (fcl_\S+)/.exec(out.join('\n'))?.[1];
  t.ok(licenceKey, 'the CLI printed the licence key');
  const check = await call('POST', '/licence/v1/check', {
    body: {
      licenceKey, fingerprint: crypto.createHash('sha256').update('logs board').digest('hex'),
      nonce: crypto.randomBytes(18).toString('base64url'), version: '0.1.0', persons: 1, usage: [],
    },
  });
  t.equal(check.status, 200, JSON.stringify(check.body));

  t.equal(await service.stop(), 0, 'the service stops cleanly (its log flushed)');
  stopped = true;
  const lines = service.output().split('\n').filter((l) => l.length > 0);
  const consoleLines = lines.filter((l) => CONSOLE_MESSAGE.test(l));
  const logLines = lines.filter((l) => !CONSOLE_MESSAGE.test(l));
  const firstKey = /Api-Key: (\S+)/.exec(consoleLines.join('\n'))?.[1];
  t.ok(firstKey, 'the first-start key went to the console, once, as designed');
  t.ok(logLines.length > 20, `${logLines.length} log lines`);

  // Every log line is JSON; those about a request carry its id, the one its client got back.
  const entries = logLines.map((l) => {
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch {
      t.fail(`not a JSON line: ${l.slice(0, 120)}`);
      return {};
    }
  });
  for (const e of entries) {
    if ('req' in e || 'res' in e || 'responseTime' in e) t.type(e.reqId, 'string', `a request line has a reqId: ${e.msg}`);
    if (typeof e.reqId === 'string') t.ok(requestIds.includes(e.reqId), `reqId ${e.reqId} is a Request-Id a client got (${e.msg})`);
  }
  for (const id of requestIds) {
    const about = entries.filter((e) => e.reqId === id);
    t.ok(about.some((e) => e.msg === 'incoming request') && about.some((e) => e.msg === 'request completed'),
      `request ${id} is logged in and out under its Request-Id`);
  }

  // No secret in any line.
  const template = templateFor(41, 0, 1);
  const secrets: Record<string, string> = {
    'the password': password, 'the wrong password': wrongPassword, 'the session token': token, 'the API key': apiKey, 'the registration\'s key': registrationKey,
    'the bootstrap key': BOOTSTRAP_KEY, 'the first-start key': firstKey ?? '(none)', 'a refused key': 'not-a-key-but-secret-looking-0001',
    'the licence key': licenceKey ?? '(none)', 'the first template value': template[0].toString(),
  };
  signatures.forEach((s, i) => { secrets[`request signature ${i + 1}`] = s; });
  const all = logLines.join('\n');
  for (const [what, secret] of Object.entries(secrets)) t.notOk(all.includes(secret), `no line holds ${what}`);
  const pieces: Record<string, Set<string>> = {
    'the image': windows(photo),
    'the private signing key': windows(signingKey.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '')),
    'the template (base64)': windows(Buffer.from(template.buffer, template.byteOffset, template.byteLength).toString('base64')),
  };
  for (const [what, set] of Object.entries(pieces)) {
    t.notOk(logLines.some((l) => holdsPieceOf(l.replace(/\\n/g, ''), set)), `no line holds ${WINDOW} characters of ${what}`);
  }
  t.notOk(logLines.some((l) => /[A-Za-z0-9+/=_-]{200,}/.test(l)), 'no base64 blob of 200 characters or more');
  t.notOk(logLines.some((l) => /(-?\d\.\d{3,}(e-?\d+)?,\s*){8}/.test(l)), 'no run of floats');
});

t.test('[log] level sets what is written: at warn, no request lines', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-logs-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  // At warn not even the listening line is written: the port is chosen here and /health/live says when it is up.
  const port = await freePort();
  const ini = writeIni(dir, '[log]\nlevel = warn');
  fs.writeFileSync(ini, fs.readFileSync(ini, 'utf8').replace('port = 0', `port = ${port}`));
  const child = spawn(process.execPath, [...process.execArgv, path.join(__dirname, '..', 'helpers', 'fake-service-main.ts'), ini],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => { output += c.toString('utf8'); });
  child.stderr!.on('data', (c: Buffer) => { output += c.toString('utf8'); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => { child.kill('SIGKILL'); });
  const base = `http://127.0.0.1:${port}`;
  let live = 0;
  for (let i = 0; i < 600 && live !== 200; i++) {
    live = await fetch(`${base}/health/live`).then((r) => r.status, () => 0);
    if (live !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(live, 200, `the service came up: ${output}`);
  const res = await fetch(`${base}/person/face/nobody`, { headers: { 'api-key': BOOTSTRAP_KEY } });
  t.equal(res.status, 404);
  child.kill('SIGTERM');
  t.equal(await exited, 0);
  const entries = output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string });
  t.same(entries.filter((e) => e.level < 40).map((e) => e.msg), [], 'nothing below warn');
  t.ok(output.includes('face-check: Api-Key:'), 'the console messages are not log lines: they stay');
});

