'use strict';
// `npm install` / `npm ci` step of this package: models, then the addon (prebuild, else a build), then
// the TypeScript build when the sources are here. Needs only the npm registry and a C++ toolchain
// (the latter only when no prebuild fits).
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { fetchModels, fetchOrtHeaders } = require('./fetch-assets');

const root = path.resolve(__dirname, '..');
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });

function addonLoads() {
  try {
    require('node-gyp-build')(root);
    return true;
  } catch {
    return false;
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
  fetchOrtHeaders();
  // cmake-js is the primary build (a dev dependency); node-gyp, which npm carries, is the fallback.
  if (hasModule('cmake-js')) run(process.execPath, [require.resolve('cmake-js/bin/cmake-js', { paths: [root] }), 'compile']);
  // npm names the node-gyp it carries in npm_config_node_gyp while it runs install scripts; npx is the
  // fallback outside npm.
  else if (process.env.npm_config_node_gyp) run(process.execPath, [process.env.npm_config_node_gyp, 'rebuild']);
  else run('npx', ['--no-install', 'node-gyp', 'rebuild']);
}

fetchModels();
if (process.env.FACE_CHECK_FORCE_BUILD === '1' || !addonLoads()) buildAddon();
if (fs.existsSync(path.join(root, 'src')) && hasModule('typescript')) {
  run(process.execPath, [require.resolve('typescript/bin/tsc', { paths: [root] }), '-p', 'tsconfig.json']);
}
