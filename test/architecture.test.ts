// The layering of src/: no import cycles, and data flows one way - routes (http) call services, services
// call engine/matching/index, and storage, the source of truth, knows none of the layers above it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { importCycles, importGraph, layerViolations, type LayerRule } from './helpers/import-graph';

const src = path.resolve(__dirname, '..', 'src');

const RULES: readonly LayerRule[] = [
  { from: 'storage/', notTo: ['services/', 'http/', 'accounts/', 'licensing/', 'install/', 'back-office/', 'start/', 'migrate/'] },
  // Services hold the rules for every backend: they see the storage contract, never a backend.
  { from: 'services/', notTo: ['http/', 'back-office/', 'storage/lmdb/', 'storage/postgres/'] },
  // Accounts, licences, the licence server and the installation hold rules; the routes and the back-office
  // are views over them.
  { from: 'accounts/', notTo: ['http/', 'back-office/'] },
  { from: 'licensing/', notTo: ['http/', 'back-office/'] },
  { from: 'install/', notTo: ['http/', 'back-office/'] },
  // The cloud's licence issuing and the device's licence client share only the signed document between them.
  { from: 'licensing/cloud/', notTo: ['licensing/device/'] },
  { from: 'licensing/device/', notTo: ['licensing/cloud/'] },
  // The command line is the entry: no layer imports it (the early start takes a configuration, not argv).
  ...['start/', 'http/', 'back-office/', 'services/', 'accounts/', 'licensing/', 'install/', 'migrate/', 'device/',
    'engine/', 'image/', 'matching/', 'similarity-index/', 'storage/', 'threads/', 'ops/', 'config/', 'domain/']
    .map((from) => ({ from, notTo: ['cli/'] })),
  // Helpers for worker threads, under every layer that starts one.
  { from: 'threads/', notTo: ['storage/', 'matching/', 'similarity-index/', 'engine/', 'services/', 'accounts/', 'licensing/', 'http/', 'back-office/'] },
];

/** The storage backends: each sees only itself and the contract at the storage root. */
const BACKENDS = ['storage/lmdb/', 'storage/postgres/'];
/** The only files outside a backend that see one: the start and its per-backend gallery sources, the chooser and the storage CLI tools. */
const BACKEND_DOORS = [
  'start/start-service.ts', 'start/gallery-sources.ts', 'storage/open-backend.ts',
  'cli/main.ts', 'cli/open-store.ts', 'cli/migrate.ts',
];

/** Imports of a backend's folder from outside it, other than by the doors, as "importer -> imported". */
function backendImports(graph: Map<string, string[]>): string[] {
  const out: string[] = [];
  for (const [file, targets] of graph) {
    if (BACKEND_DOORS.includes(file)) continue;
    for (const target of targets) {
      const backend = BACKENDS.find((b) => target.startsWith(b));
      if (backend && !file.startsWith(backend)) out.push(`${file} -> ${target}`);
    }
  }
  return out.sort();
}

/** Files named as a folder beside them (x.ts beside x/), as paths relative to the root: one name, two things. */
function namesTwice(root: string, dir = ''): string[] {
  const entries = fs.readdirSync(path.join(root, dir), { withFileTypes: true });
  const folders = new Set(entries.filter((e) => e.isDirectory()).map((e) => e.name));
  return entries.flatMap((e) => {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) return namesTwice(root, rel);
    return folders.has(e.name.replace(/\.ts$/, '')) && e.name.endsWith('.ts') ? [rel] : [];
  });
}

/** A temporary source tree for a check to fail on, removed when the test ends. */
function generatedTree(t: { teardown(fn: () => void): void }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-arch-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  };
  return { dir, write };
}

t.test('src/ has no import cycle', async (t) => {
  const graph = importGraph(src);
  t.ok(graph.size > 50, `read ${graph.size} files`);
  t.same(importCycles(graph), [], 'cycles (each: the files that import each other)');
});

t.test('storage imports no layer above it; services and licensing do not import http or the back-office; threads/ imports no layer', async (t) => {
  t.same(layerViolations(importGraph(src), RULES), []);
});

t.test('only the start, the backend chooser and the storage CLI tools import a storage backend', async (t) => {
  t.same(backendImports(importGraph(src)), []);
});

t.test('no file has the name of a folder beside it', async (t) => {
  t.same(namesTwice(src), []);
});

/** Folders of test/ (but helpers/) that mirror no folder of src/ (client/ mirrors the client package). */
function unmirrored(testRoot: string, srcRoot: string, dir = ''): string[] {
  return fs.readdirSync(path.join(testRoot, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (!e.isDirectory() || rel === 'helpers') return [];
    const mirrored = fs.existsSync(path.join(srcRoot, rel)) || rel === 'client';
    return mirrored ? unmirrored(testRoot, srcRoot, rel) : [rel];
  });
}

t.test('test/ holds its tests in folders that mirror src/', async (t) => {
  t.same(unmirrored(__dirname, src), []);
  t.same(fs.readdirSync(__dirname).filter((f) => f.endsWith('.test.ts')).sort(), ['architecture.test.ts', 'errors.test.ts'],
    'at the top only the tests of src/ as a whole and of its top-level error table');
  const { dir, write } = generatedTree(t);
  write('src/storage/postgres/store.ts', 'export {};\n');
  write('test/storage/postgres/store.test.ts', 'export {};\n');
  write('test/helpers/app.ts', 'export {};\n');
  write('test/store/lock.test.ts', 'export {};\n');
  t.same(unmirrored(path.join(dir, 'test'), path.join(dir, 'src')), ['store'], 'a folder src/ lacks is found');
});

t.test('the name check fails on a file beside a folder of its name', async (t) => {
  const { dir, write } = generatedTree(t);
  write('cli.ts', 'export {};\n');
  write('cli/args.ts', 'export {};\n');
  write('http/app.ts', 'export {};\n');
  write('similarity-index/index-binding.ts', 'export {};\n');
  write('index.ts', 'export {};\n');
  t.same(namesTwice(dir), ['cli.ts']);
});

t.test('the checks fail on a generated cycle and a wrong-way import', async (t) => {
  const { dir, write } = generatedTree(t);
  write('services/a.ts', "import { b } from './b';\nexport const a = () => b;\n");
  // A type-only import closes the cycle: it still ties the two files together.
  write('services/b.ts', "import type { a } from './a';\nexport const b = 1;\nexport type A = typeof a;\n");
  write('storage/store.ts', "import { a } from '../services/a';\nexport const s = a;\n");
  write('storage/index.ts', "export * from './store';\n");
  write('http/route.ts', "import { s } from '../storage';\nconst lazy = () => require('../services/b');\nexport { s, lazy };\n");
  const graph = importGraph(dir);
  t.same(graph.get('http/route.ts'), ['services/b.ts', 'storage/index.ts'], 'require() and folder imports resolve');
  t.same(importCycles(graph), [['services/a.ts', 'services/b.ts']], 'the cycle is found');
  t.same(layerViolations(graph, RULES), ['storage/store.ts -> services/a.ts'], 'the wrong-way import is found');

  write('services/b.ts', 'export const b = 1;\n');
  t.same(importCycles(importGraph(dir)), [], 'no cycle once it is broken');
});

t.test('the backend checks fail on a service, another layer or the other backend importing a backend', async (t) => {
  const { dir, write } = generatedTree(t);
  write('storage/interfaces.ts', 'export interface AsyncStore { close(): Promise<void> }\n');
  write('storage/lmdb/store.ts', "import type { AsyncStore } from '../interfaces';\nexport type S = AsyncStore;\n");
  write('storage/lmdb/persons.ts', "import type { S } from './store';\nexport type P = S;\n");
  write('storage/postgres/store.ts', "import type { S } from '../lmdb/store';\nexport type Q = S;\n");
  write('storage/open-backend.ts', "import type { S } from './lmdb/store';\nimport type { Q } from './postgres/store';\nexport type B = S | Q;\n");
  write('start/start-service.ts', "import type { B } from '../storage/open-backend';\nimport type { S } from '../storage/lmdb/store';\nexport type R = B | S;\n");
  write('services/persons.ts', "import type { AsyncStore } from '../storage/interfaces';\nimport type { P } from '../storage/lmdb/persons';\nexport type X = AsyncStore | P;\n");
  write('matching/galleries.ts', "const pg = () => require('../storage/postgres/store');\nexport { pg };\n");
  const graph = importGraph(dir);
  t.same(backendImports(graph), [
    'matching/galleries.ts -> storage/postgres/store.ts',
    'services/persons.ts -> storage/lmdb/persons.ts',
    'storage/postgres/store.ts -> storage/lmdb/store.ts',
  ], 'a layer and the other backend are refused; the start, the chooser and the backend itself pass');
  t.same(layerViolations(graph, RULES), ['services/persons.ts -> storage/lmdb/persons.ts'], 'a service importing a backend is found');
});
