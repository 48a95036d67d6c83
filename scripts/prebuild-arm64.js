'use strict';
// Second half of `npm run prebuild` on an x64 Linux machine: prebuilds/linux-arm64/face-check.node,
// cross-compiled with Debian's g++-aarch64-linux-gnu by node-gyp (through prebuildify) from the same
// binding.gyp, source list and flags as the x64 prebuild. The addon opens libonnxruntime.so.1 at run
// time (dlopen, from onnxruntime-node's linux/arm64 folder on the board), so nothing of ONNX Runtime
// but its C headers is needed here. Without the cross toolchain this step is skipped with a message,
// unless FACE_CHECK_REQUIRE_ARM64=1 (CI), where that is an error.
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { fetchHeaders } = require('./fetch-assets');

const root = path.resolve(__dirname, '..');
const TRIPLET = 'aarch64-linux-gnu';
const TOOLS = { CC: `${TRIPLET}-gcc`, CXX: `${TRIPLET}-g++`, AR: `${TRIPLET}-ar`, STRIP: `${TRIPLET}-strip` };
const OUT_DIR = path.join(root, 'prebuilds', 'linux-arm64');
const EM_AARCH64 = 183;

const onPath = (tool) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status === 0;

/** The reason this machine cannot cross-build, or '' when it can. */
function whyNot() {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `this is ${process.platform}-${process.arch}, not linux-x64`;
  const missing = Object.values(TOOLS).filter((t) => !onPath(t));
  return missing.length ? `${missing.join(', ')} not found (apt-get install g++-${TRIPLET})` : '';
}

/** ELF machine number of a shared object (183 = aarch64). */
function elfMachine(file) {
  const head = Buffer.alloc(20);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, head, 0, 20, 0);
  } finally {
    fs.closeSync(fd);
  }
  return head.readUInt16LE(18);
}

/**
 * node-gyp always builds into <cwd>/build, where the x64 build lives (node-gyp-build would load an arm64
 * file from there first and fail on x64). So the cross build runs in a scratch folder holding the build
 * description and links to the sources it reads.
 */
function stagingFolder() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-arm64-'));
  for (const file of ['binding.gyp', 'package.json']) fs.copyFileSync(path.join(root, file), path.join(dir, file));
  for (const folder of ['native', 'deps', 'node_modules']) fs.symlinkSync(path.join(root, folder), path.join(dir, folder));
  return dir;
}

/** Node's own headers where the running node has them (offline: node-gyp would download them otherwise). */
function nodeHeadersDir() {
  if (process.env.npm_config_nodedir) return process.env.npm_config_nodedir;
  const prefix = path.resolve(path.dirname(process.execPath), '..');
  return fs.existsSync(path.join(prefix, 'include', 'node', 'node_api.h')) ? prefix : undefined;
}

function crossBuild() {
  fetchHeaders();
  const staging = stagingFolder();
  const started = Date.now();
  try {
    const nodedir = nodeHeadersDir();
    const env = {
      ...process.env, ...TOOLS, LINK: TOOLS.CXX, JOBS: String(os.availableParallelism?.() ?? os.cpus().length),
      ...(nodedir ? { npm_config_nodedir: nodedir } : {}),
    };
    const prebuildify = require.resolve('prebuildify/bin.js', { paths: [root] });
    execFileSync(process.execPath, [prebuildify, '--napi', '--strip', '--arch', 'arm64', '--strip-bin', TOOLS.STRIP], {
      cwd: staging, env, stdio: 'inherit',
    });
    const built = path.join(staging, 'prebuilds', 'linux-arm64');
    fs.rmSync(OUT_DIR, { recursive: true, force: true });
    fs.cpSync(built, OUT_DIR, { recursive: true });
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  const addons = fs.readdirSync(OUT_DIR).filter((f) => f.endsWith('.node'));
  if (addons.length !== 1) throw new Error(`expected one addon in ${OUT_DIR}, found ${addons.join(', ') || 'none'}`);
  const addon = path.join(OUT_DIR, addons[0]);
  const machine = elfMachine(addon);
  if (machine !== EM_AARCH64) throw new Error(`${addon} is ELF machine ${machine}, not aarch64 (${EM_AARCH64})`);
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  console.log(`face-check: ${path.relative(root, addon)} (aarch64, ${fs.statSync(addon).size} bytes) cross-built in ${seconds} s`);
}

if (process.arch === 'arm64') {
  console.log('face-check: this machine is arm64; the native prebuild step already made prebuilds/linux-arm64');
} else {
  const reason = whyNot();
  if (!reason) crossBuild();
  else if (process.env.FACE_CHECK_REQUIRE_ARM64 === '1') {
    console.error(`face-check: cannot cross-build the arm64 prebuild: ${reason}; FACE_CHECK_REQUIRE_ARM64=1 makes this an error`);
    process.exit(1);
  } else {
    // An older arm64 addon left in place would be packed beside a newer x64 one.
    fs.rmSync(OUT_DIR, { recursive: true, force: true });
    console.warn(`face-check: arm64 prebuild skipped: ${reason}; prebuilds/linux-arm64 removed, so a package ` +
      'made now builds the addon on arm64 at install (set FACE_CHECK_REQUIRE_ARM64=1 to make this an error)');
  }
}
