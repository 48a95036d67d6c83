'use strict';
// binding.gyp's view of native/sources.json's camera_sources (CMakeLists.txt reads the same list itself):
// the sources, defines and include folders of every camera source whose SDK header is found here.
//   node native/camera-sources.js sources|defines|include_dirs
const fs = require('node:fs');
const path = require('node:path');

// deps/sdk/include first: the headers scripts/fetch-assets.js fetches for SDKs that no Debian package has
// (the same pinned version in every build, whatever the machine has installed); CMakeLists.txt searches
// the same folders in the same order.
const INCLUDE_ROOTS = [path.join(__dirname, '..', 'deps', 'sdk', 'include'), '/usr/include', '/usr/local/include'];
const { camera_sources: sources } = require('./sources.json');

/** The folder holding the source's header, or undefined. */
function headerFolder(spec) {
  for (const root of INCLUDE_ROOTS) {
    for (const dir of [root, path.join(root, spec.include_suffix ?? '')]) {
      if (fs.existsSync(path.join(dir, spec.header))) return dir;
    }
  }
  return undefined;
}

const root = path.join(__dirname, '..');
const missingSources = (spec) => spec.sources.filter((f) => !fs.existsSync(path.join(root, f)));

const found = Object.entries(sources)
  .map(([name, spec]) => ({ name, spec, dir: headerFolder(spec) }))
  .filter((s) => s.dir)
  .filter((s) => {
    const missing = missingSources(s.spec);
    // As CMakeLists.txt does: a header without its sources leaves the source out, loudly.
    if (missing.length) process.stderr.write(`face-check: ${s.name} camera source disabled: ${s.spec.header} found but its sources are missing: ${missing.join(' ')}\n`);
    return missing.length === 0;
  });

const what = process.argv[2];
const out = {
  sources: () => found.flatMap((s) => s.spec.sources),
  defines: () => found.map((s) => `FACE_CHECK_HAVE_${s.name.toUpperCase()}`),
  include_dirs: () => found.map((s) => s.dir),
}[what];
if (!out) {
  process.stderr.write('usage: node native/camera-sources.js sources|defines|include_dirs\n');
  process.exit(2);
}
process.stdout.write(out().join(' '));
