'use strict';
// binding.gyp's view of native/sources.json's camera_sources (CMakeLists.txt reads the same list itself):
// the sources, defines and include folders of every camera source whose SDK header is found here.
//   node native/camera-sources.js sources|defines|include_dirs
const fs = require('node:fs');
const path = require('node:path');

const INCLUDE_ROOTS = ['/usr/include', '/usr/local/include'];
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

const found = Object.entries(sources)
  .map(([name, spec]) => ({ name, spec, dir: headerFolder(spec) }))
  .filter((s) => s.dir);

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
