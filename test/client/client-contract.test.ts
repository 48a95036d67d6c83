// The client's types and operation table (client/src/contract.ts, errors.ts) against the OpenAPI document the
// service generates from its own route schemas, in both modes: every operation's method and path, request
// fields, 200 fields and error codes, and a typed error class for every code. A route schema change that the
// client does not follow fails here. Also: the browser entry imports nothing of Node.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ERROR_CLASSES, OPERATIONS, type LiveFace, type Person } from '../../client/src/index';
import { startTestApp } from '../helpers/app';

type Schema = { type?: string; required?: string[]; properties?: Record<string, unknown>; oneOf?: Schema[]; description?: string };

// Written out per key, so a field added to or removed from the types fails to compile until this follows.
const PERSON_KEYS: Record<keyof Person, true> = { personId: true, created: true, updated: true };
const LIVE_FACE_KEYS: Record<keyof LiveFace, true> = { faceKey: true, faceImage: true };

const sorted = (xs: Iterable<string>) => [...xs].sort();

async function openapi(mode: 'cloud' | 'device') {
  const a = await startTestApp({ tune: (c) => { c.server.mode = mode; c.camera.source = 'none'; } });
  try {
    const res = await a.call({ method: 'GET', url: '/openapi.json', key: null });
    return res.json() as { info: { version: string; title: string }; paths: Record<string, Record<string, any>> };
  } finally {
    await a.close();
  }
}

for (const mode of ['cloud', 'device'] as const) {
  t.test(`${mode} mode: the client's operations are the service's`, async (t) => {
    const doc = await openapi(mode);
    t.equal(doc.info.version, (await import('../../client/src/index')).API_VERSION, 'the API version');
    const seen = new Set<string>();
    for (const [name, op] of Object.entries(OPERATIONS)) {
      const route = doc.paths[op.path]?.[op.method.toLowerCase()];
      if (!(op.modes as readonly string[]).includes(mode)) {
        t.notOk(route, `${name}: not in ${mode} mode`);
        continue;
      }
      seen.add(`${op.method} ${op.path}`);
      if (!route) {
        t.fail(`${name}: ${op.method} ${op.path} missing from the ${mode} document`);
        continue;
      }
      const body: Schema | undefined = route.requestBody?.content?.['application/json']?.schema;
      if (!('body' in op)) t.notOk(body, `${name}: no request body`);
      else {
        const b = op.body as { required: readonly string[]; optional?: readonly string[]; deviceAlternatives?: readonly string[] };
        const alternatives = mode === 'device' ? b.deviceAlternatives ?? [] : [];
        t.same(sorted(Object.keys(body?.properties ?? {})), sorted([...b.required, ...(b.optional ?? []), ...alternatives]), `${name}: body fields`);
        if (alternatives.length) {
          t.same(body?.oneOf?.map((s) => s.required), [[...b.required], [...alternatives]], `${name}: exactly one of ${b.required} and ${alternatives}`);
        } else {
          t.same(sorted(body?.required ?? []), sorted(b.required), `${name}: required fields`);
        }
      }
      const ok: Schema = route.responses['200']?.content?.['application/json']?.schema;
      const fields = (op.ok as Record<string, readonly string[] | null>)[mode] ?? [];
      t.same(sorted(Object.keys(ok?.properties ?? {})), sorted(fields), `${name}: 200 fields`);
      t.same(sorted(ok?.required ?? []), sorted(fields), `${name}: 200 fields all present`);
      const errors: Record<string, string[]> = {};
      for (const [status, r] of Object.entries(route.responses as Record<string, { description?: string }>)) {
        if (status === '200') continue;
        const m = /code one of: (.*)$/.exec(r.description ?? '');
        errors[status] = m ? sorted(m[1].split(', ')) : [];
      }
      t.same(errors, Object.fromEntries(Object.entries(op.errors).map(([s, codes]) => [s, sorted(codes as readonly string[])])),
        `${name}: error codes by status`);
      for (const codes of Object.values(errors)) {
        for (const code of codes) t.ok(ERROR_CLASSES[code], `${name}: ${code} has a typed error class`);
      }
    }
    for (const [p, methods] of Object.entries(doc.paths)) {
      if (!p.startsWith('/person/')) continue;
      for (const m of Object.keys(methods)) t.ok(seen.has(`${m.toUpperCase()} ${p}`), `${m.toUpperCase()} ${p} has a client method`);
    }
    const personSchema: Schema = doc.paths['/person/face/{person_id}'].get.responses['200'].content['application/json'].schema;
    t.same(sorted(Object.keys(personSchema.properties!)), sorted(Object.keys(PERSON_KEYS)), 'Person: the service\'s person fields');
    if (mode === 'device') {
      const live: Schema = doc.paths['/person/face/'].get.responses['200'].content['application/json'].schema;
      t.same(sorted(Object.keys(live.properties!)), sorted(Object.keys(LIVE_FACE_KEYS)), 'LiveFace: the service\'s live face fields');
    }
  });
}

t.test('every error code of the spec (section 7) has its own class', async (t) => {
  const spec = ['R_400', 'R_404', 'F_012', 'F_011', 'F_010', 'F_009', 'F_008', 'F_007', 'F_006', 'F_005', 'F_004', 'F_003',
    'F_002', 'F_001', 'CP_002', 'R_002', 'R_003', 'CP_005', 'NF_001', 'RF_001'];
  const classes = spec.map((code) => ERROR_CLASSES[code]);
  t.equal(new Set(classes).size, spec.length, 'one class per code');
  t.notOk(classes.includes(undefined as never));
});

t.test('the browser entry (client/src/index.ts) reaches no Node module', async (t) => {
  const dir = path.join(__dirname, '..', '..', 'client', 'src');
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = fs.readFileSync(path.join(dir, file), 'utf8');
    for (const [, spec] of text.matchAll(/(?:from|import\()\s*'([^']+)'/g)) {
      t.ok(spec.startsWith('./'), `${file} imports ${spec}`);
      if (spec.startsWith('./')) visit(`${spec.slice(2)}.ts`);
    }
    t.notMatch(text, /\bprocess\.|\brequire\(/, `${file}: no process or require`);
  };
  visit('index.ts');
  t.notOk(seen.has('node.ts') || seen.has('node-signing.ts'), 'the Node parts stay out');
});
