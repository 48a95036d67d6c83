// The examples of client/README.md and the client example of README.md ("Example: enrol and identify"), each
// run as a program against a real service process, with the photos and key files they name in their working
// folder: cloud examples against `face-check serve` with the real engine and real photos (crops of the face-api
// demo photos; the fake engine and marker photos when those cannot be fetched), a block starting
// "// device mode" against a device with the synthetic camera (its live face is real, its engine the fake).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Sharp } from 'sharp';
import t from 'tap';
import { tempDir } from '../helpers/app';
import { fakePhoto } from '../helpers/fake-engine';
import { faceCrop, groupPhoto, photosSkip } from '../helpers/photos';
import { startClientTestService, type ClientTestService } from '../helpers/client/services';

const root = path.join(__dirname, '..', '..');
const ADDRESS = 'http://127.0.0.1:8080';

/** The ```ts blocks of a markdown file. */
function tsBlocks(file: string): string[] {
  return [...fs.readFileSync(path.join(root, file), 'utf8').matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** A block as a module: imports of the package pointed at client/src, the rest inside an exported main. */
function program(block: string, baseUrl: string): string {
  const lines = block.replaceAll(ADDRESS, baseUrl)
    .replaceAll("'@face-check/client/node'", JSON.stringify(path.join(root, 'client', 'src', 'node')))
    .replaceAll("'@face-check/client'", JSON.stringify(path.join(root, 'client', 'src', 'index')))
    .split('\n');
  const imports = lines.filter((l) => l.startsWith('import '));
  const body = lines.filter((l) => !l.startsWith('import '));
  return [...imports, 'export async function main() {', ...body, '}', ''].join('\n');
}

interface Run { module: string; cwd: string; env: Record<string, string>; baseUrl: string; apiKey: string; personIds: string[] }

/**
 * One child process runs every example in turn (one TypeScript start-up, not one per example), each in its
 * own folder and environment, its output between markers; afterwards it removes the persons the example
 * enrolled, so each example starts from an empty account as a reader's would.
 */
const RUNNER = `
import { FaceCheckClient } from ${JSON.stringify(path.join(root, 'client', 'src', 'node'))};
const runs = JSON.parse(require('node:fs').readFileSync(process.argv[2], 'utf8'));
(async () => {
  for (const [i, r] of runs.entries()) {
    process.chdir(r.cwd);
    Object.assign(process.env, r.env);
    console.log('@@start ' + i);
    try {
      await require(r.module).main();
      console.log('@@ok ' + i);
    } catch (err) {
      console.log('@@failed ' + i + ' ' + String(err && err.stack || err));
    }
    const cleanup = new FaceCheckClient({ baseUrl: r.baseUrl, apiKey: r.apiKey });
    for (const id of r.personIds) await cleanup.removePerson(id).catch(() => undefined);
  }
})();
`;

function runAll(dir: string, runs: Run[]): Promise<string> {
  fs.writeFileSync(path.join(dir, 'runs.json'), JSON.stringify(runs));
  fs.writeFileSync(path.join(dir, 'runner.ts'), RUNNER);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...process.execArgv, path.join(dir, 'runner.ts'), path.join(dir, 'runs.json')],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString('utf8'); });
    child.stderr.on('data', (c: Buffer) => { out += c.toString('utf8'); });
    child.once('exit', () => resolve(out));
  });
}

const same = (s: Sharp) => s.flop().resize(400); // another photo of the same face: mirrored, smaller

async function workFolder(service: ClientTestService, real: boolean): Promise<string> {
  const dir = tempDir();
  const photos: Record<string, () => Promise<Buffer>> = real
    ? {
        'alice.jpg': () => faceCrop('A'), 'alice-at-the-gate.jpg': () => faceCrop('A', same),
        'bob.jpg': () => faceCrop('B'), 'bob-new.jpg': () => faceCrop('B', same),
        'carol.jpg': () => faceCrop('E'), 'group-photo.jpg': async () => groupPhoto(3),
      }
    : {
        'alice.jpg': () => fakePhoto({ identity: 901 }), 'alice-at-the-gate.jpg': () => fakePhoto({ identity: 901, variant: 1, cosine: 0.99 }),
        'bob.jpg': () => fakePhoto({ identity: 902 }), 'bob-new.jpg': () => fakePhoto({ identity: 902, variant: 1, cosine: 0.99 }),
        'carol.jpg': () => fakePhoto({ identity: 903 }), 'group-photo.jpg': () => fakePhoto({ identity: 904, faces: 3 }),
      };
  for (const [name, make] of Object.entries(photos)) fs.writeFileSync(path.join(dir, name), await make());
  fs.writeFileSync(path.join(dir, 'signing-key.pem'), service.signing.signingKey);
  fs.writeFileSync(path.join(dir, 'service-public-key.pem'), service.signing.servicePublicKey);
  return dir;
}

const examples = [
  ...tsBlocks('client/README.md').map((code, i) => ({ where: `client/README.md example ${i + 1}`, code })),
  ...tsBlocks('README.md').map((code, i) => ({ where: `README.md example ${i + 1}`, code })),
];

t.test('the READMEs\' examples run against a real service', async (t) => {
  t.ok(examples.filter((e) => e.where.startsWith('client/')).length >= 6, 'client/README.md has its examples');
  t.equal(examples.filter((e) => e.where.startsWith('README.md')).length, 1, 'README.md has the enrol-and-identify example');
  const real = !photosSkip();
  if (!real) t.comment(`cloud examples with the fake engine: ${photosSkip()}`);
  const [cloud, device] = await Promise.all([
    startClientTestService(t, ['[server]', 'mode = cloud', '[camera]', 'source = none'], real ? 'real' : 'fake'),
    startClientTestService(t, ['[server]', 'mode = device', '[camera]', 'source = synthetic',
      '[camera.synthetic]', 'scenario = live:600', '[licence]', 'development = true']),
  ]);
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const runs: Run[] = [];
  for (const [i, e] of examples.entries()) {
    const service = e.code.startsWith('// device mode') ? device : cloud;
    const cwd = await workFolder(service, real && service === cloud);
    t.teardown(() => fs.rmSync(cwd, { recursive: true, force: true }));
    const module = path.join(dir, `example-${i}.ts`);
    fs.writeFileSync(module, program(e.code, service.baseUrl));
    runs.push({
      module, cwd, baseUrl: service.baseUrl, apiKey: service.apiKey,
      env: { FACE_CHECK_KEY: service.apiKey, FACE_CHECK_ENTERPRISE_KEY: service.signing.apiKey },
      personIds: [...e.code.matchAll(/createPerson\('([^']+)'/g)].map((m) => m[1]),
    });
  }
  const out = await runAll(dir, runs);
  for (const [i, e] of examples.entries()) {
    const own = new RegExp(`@@start ${i}\\n([\\s\\S]*?)(?=@@start ${i + 1}\\n|$)`).exec(out)?.[1] ?? '';
    t.match(own, new RegExp(`@@ok ${i}\\n`), `${e.where} runs:\n${own || out}`);
    for (const m of e.code.matchAll(/console\.log\([^\n]*\/\/ ([A-Za-z_0-9]+)\b/g)) {
      t.match(own, m[1], `${e.where} prints ${m[1]}`);
    }
  }
});
