'use strict';
// `npm test`: compiles the TypeScript (a type error fails the run), runs every tap test file, shows
// tap's own report, and ends with the line CI reads: "N passed, N failed, N skipped", counting the
// tests (t.test blocks) of every file.
const { spawn, execFileSync } = require('node:child_process');
const path = require('node:path');
const { Parser } = require('tap-parser');

const root = path.resolve(__dirname, '..');
// Type errors fail the run before any test does (the sources, the benchmarks and the tests themselves).
const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
for (const project of ['tsconfig.json', 'test/tsconfig.json']) {
  try {
    execFileSync(process.execPath, [tsc, '-p', project], { cwd: root, stdio: 'inherit' });
  } catch {
    console.log(`\ntype check of ${project} failed\n0 passed, 1 failed, 0 skipped`);
    process.exit(1);
  }
}

const files = process.argv.slice(2);
const tap = spawn(process.execPath, [require.resolve('tap/bin/run.js', { paths: [root] }), '--reporter=tap', ...files], {
  cwd: root, stdio: ['ignore', 'pipe', 'inherit'],
});

const counts = { passed: 0, failed: 0, skipped: 0 };
const failures = [];
const parser = new Parser();
parser.on('child', (file) => {
  // Each child of the root is one test file; its asserts are its tests and top-level assertions.
  file.on('assert', (a) => {
    if (a.skip || a.todo) counts.skipped++;
    else if (a.ok) counts.passed++;
    else { counts.failed++; failures.push(`${file.name} > ${a.name}`); }
  });
});
tap.stdout.on('data', (chunk) => process.stdout.write(chunk));
tap.stdout.pipe(parser);

tap.on('close', (code) => {
  parser.end();
  if (failures.length) console.log(`\nfailed:\n  ${failures.join('\n  ')}`);
  if (code !== 0 && counts.failed === 0) { counts.failed = 1; console.log(`tap exited with code ${code}`); }
  console.log(`\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
  process.exitCode = counts.failed ? 1 : 0;
});
