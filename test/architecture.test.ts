// The layering of src/: no import cycles, and data flows one way - routes (http) call services, services
// call engine/matching/index, and storage, the source of truth, knows none of the layers above it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { importCycles, importGraph, layerViolations, type LayerRule } from './helpers/import-graph';

const src = path.resolve(__dirname, '..', 'src');

const RULES: readonly LayerRule[] = [
  { from: 'storage/', notTo: ['services/', 'http/', 'licensing/', 'back-office/'] },
  { from: 'services/', notTo: ['http/', 'back-office/'] },
  // Accounts, licences and the licence server hold rules; the routes and the back-office are views over them.
  { from: 'licensing/', notTo: ['http/', 'back-office/'] },
  // Helpers for worker threads, under every layer that starts one.
  { from: 'threads/', notTo: ['storage/', 'matching/', 'index/', 'engine/', 'services/', 'licensing/', 'http/', 'back-office/'] },
];

t.test('src/ has no import cycle', async (t) => {
  const graph = importGraph(src);
  t.ok(graph.size > 50, `read ${graph.size} files`);
  t.same(importCycles(graph), [], 'cycles (each: the files that import each other)');
});

t.test('storage imports no layer above it; services and licensing do not import http or the back-office; threads/ imports no layer', async (t) => {
  t.same(layerViolations(importGraph(src), RULES), []);
});

t.test('the checks fail on a generated cycle and a wrong-way import', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-arch-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  };
  write('services/a.ts', "import { b } from './b';\nexport const a = () => b;\n");
  // A type-only import closes the cycle: it still ties the two files together.
  write('services/b.ts', "import type { a } from './a';\nexport const b = 1;\nexport type A = typeof a;\n");
  write('storage/lmdb/store.ts', "import { a } from '../services/a';\nexport const s = a;\n");
  write('storage/index.ts', "export * from './store';\n");
  write('http/route.ts', "import { s } from '../storage';\nconst lazy = () => require('../services/b');\nexport { s, lazy };\n");
  const graph = importGraph(dir);
  t.same(graph.get('http/route.ts'), ['services/b.ts', 'storage/index.ts'], 'require() and folder imports resolve');
  t.same(importCycles(graph), [['services/a.ts', 'services/b.ts']], 'the cycle is found');
  t.same(layerViolations(graph, RULES), ['storage/lmdb/store.ts -> services/a.ts'], 'the wrong-way import is found');

  write('services/b.ts', 'export const b = 1;\n');
  t.same(importCycles(importGraph(dir)), [], 'no cycle once it is broken');
});
