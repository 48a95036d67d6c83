'use strict';
// `npm test`: compiles the TypeScript (a type error fails the run), runs every tap test file, shows
// tap's own report, and ends with the line CI reads: "N passed, N failed, N skipped", counting the
// tests (t.test blocks) of every file.
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { Parser } = require('tap-parser');

const root = path.resolve(__dirname, '..');
// Type errors fail the run before any test does (the sources, the benchmarks and the tests themselves), and
// the client package (client/) is built into client/dist.
const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
for (const project of ['tsconfig.json', 'test/tsconfig.json', 'client/tsconfig.json']) {
  try {
    execFileSync(process.execPath, [tsc, '-p', project], { cwd: root, stdio: 'inherit' });
  } catch {
    console.log(`\ntype check of ${project} failed\n0 passed, 1 failed, 0 skipped`);
    process.exit(1);
  }
}

// The test files: those named on the command line, else every *.test.ts under test/ (its folders mirror
// src/; test/helpers holds no tests), named explicitly so tap's default globs never pick up this script.
const testFiles = (dir) => fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
  const file = `${dir}/${e.name}`;
  if (e.isDirectory()) return e.name === 'helpers' ? [] : testFiles(file);
  return e.name.endsWith('.test.ts') ? [file] : [];
});
const files = process.argv.length > 2 ? process.argv.slice(2) : testFiles('test').sort();
// tap's command-line entry, from its package.json `bin` (its `exports` do not expose the file).
const tapPackage = path.dirname(require.resolve('tap/package.json', { paths: [root] }));
const tapBin = path.join(tapPackage, require(path.join(tapPackage, 'package.json')).bin.tap);
const tap = spawn(process.execPath, [tapBin, '--reporter=tap', ...files], {
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
