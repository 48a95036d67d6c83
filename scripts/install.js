'use strict';
// The install step of this package: models, then the addon, then the TypeScript build when the sources are
// here. Needs only the npm registry, plus a C++ toolchain where the addon is built.
//
// Where the addon comes from:
// - a source checkout (`npm ci` here: src/ is present): the prebuild when one loads, else a local build;
// - the installed package (a device, or a project depending on it): the prebuild for this platform, never a
//   build. A device has no toolchain (and need not have one): when no prebuild loads, this step fails
//   naming the platform and what the package carries, before anything compiles half-way.
//   FACE_CHECK_FORCE_BUILD=1 builds from source anyway, wherever (needs a C++17 compiler, make, python3).
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { fetchModels, fetchHeaders } = require('./fetch-assets');

const root = path.resolve(__dirname, '..');
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });

/** Why the addon does not load ('' when it does): node-gyp-build takes build/ first, then prebuilds/. */
function addonProblem() {
  try {
    require('node-gyp-build')(root);
    return '';
  } catch (err) {
    return err.message.split('\n')[0];
  }
}

function hasModule(name) {
  try {
    require.resolve(`${name}/package.json`, { paths: [root] });
    return true;
  } catch {
    return false;
  }
}

function buildAddon() {
  fetchHeaders();
  // cmake-js is the primary build (a dev dependency); node-gyp, which npm carries, is the fallback.
  if (hasModule('cmake-js')) run(process.execPath, [require.resolve('cmake-js/bin/cmake-js', { paths: [root] }), 'compile']);
  // npm names the node-gyp it carries in npm_config_node_gyp while it runs install scripts; npx is the
  // fallback outside npm.
  else if (process.env.npm_config_node_gyp) run(process.execPath, [process.env.npm_config_node_gyp, 'rebuild']);
  else run('npx', ['--no-install', 'node-gyp', 'rebuild']);
}

/** The prebuilds/ folders the package carries (linux-x64, ...). */
function carriedPlatforms() {
  const dir = path.join(root, 'prebuilds');
  const hasAddon = (p) => fs.statSync(path.join(dir, p)).isDirectory() && fs.readdirSync(path.join(dir, p)).some((f) => f.endsWith('.node'));
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter(hasAddon) : [];
}

function refuseBuild(problem) {
  const platform = `${process.platform}-${process.arch}`;
  const carried = carriedPlatforms();
  const why = carried.includes(platform)
    ? `its prebuilt addon for ${platform} does not load here: ${problem}`
    : `it carries no prebuilt addon for ${platform} (only for ${carried.join(', ') || 'no platform'}); face-check devices are linux-x64 or linux-arm64`;
  console.error(`face-check: cannot install this package: ${why}. Nothing was compiled: installing never builds the ` +
    'addon on a device. FACE_CHECK_FORCE_BUILD=1 builds it from source instead (needs a C++17 compiler, make and python3)');
  process.exit(1);
}

const sourceCheckout = fs.existsSync(path.join(root, 'src'));
fetchModels();
if (process.env.FACE_CHECK_FORCE_BUILD === '1') buildAddon();
else {
  const problem = addonProblem();
  if (problem && sourceCheckout) buildAddon();
  else if (problem) refuseBuild(problem);
}
if (sourceCheckout && hasModule('typescript')) {
  run(process.execPath, [require.resolve('typescript/bin/tsc', { paths: [root] }), '-p', 'tsconfig.json']);
}
