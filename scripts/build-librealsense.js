'use strict';
// Builds librealsense2 (the library only: its shared object and its headers) once from the full source the
// npm package node-librealsense ships, into the cache folder, for the realsense camera source's tests.
// Debian does not ship librealsense2 and only the npm registry is reachable where this project builds.
// Nothing of ours links it: the realsense source opens librealsense2.so.2 at run time (dlopen), and the
// tests point it at the cached copy. A board gets librealsense2 from Intel's packages instead.
//
//   node scripts/build-librealsense.js          builds it unless cached; prints the library's path
//   node scripts/build-librealsense.js --where  prints the cache folder it would use (builds nothing)
//
// Needs cmake, make, a C++ compiler, pkg-config and libusb-1.0's headers (apt-get install libusb-1.0-0-dev).
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { cacheDir, packTarball, sha256File } = require('./npm-tarball');
const PATCHES = require('./librealsense-patches');

const PACKAGE = 'node-librealsense@0.2130.0';
// The tarball as published: a different one (a republished version) is refused, as for the models.
const PACKAGE_SHA256 = '8de11829423a124227e628d0a5efad4c9fcd5a9d58cfe22772f27aad1c880b10';
const SOURCE_DIR = 'package/librealsense';
const VERSION = '2.13.0';
const SONAME = 'librealsense2.so.2';
// The library alone: no examples, tools, tests, bindings, nor the TM2 tracking module (which would fetch
// firmware from the network at configure time).
const CMAKE_OPTIONS = [
  '-DCMAKE_BUILD_TYPE=Release',
  '-DBUILD_SHARED_LIBS=ON',
  '-DBUILD_EXAMPLES=OFF',
  '-DBUILD_GRAPHICAL_EXAMPLES=OFF',
  '-DBUILD_UNIT_TESTS=OFF',
  '-DBUILD_WITH_TM2=OFF',
  '-DBUILD_PYTHON_BINDINGS=OFF',
  '-DBUILD_NODEJS_BINDINGS=OFF',
  '-DBUILD_WITH_OPENMP=OFF',
];

/** The cache folder of this version, machine, build options and patches (a change to any is a new build). */
function libraryRoot() {
  const key = crypto.createHash('sha256').update(JSON.stringify({ PACKAGE_SHA256, CMAKE_OPTIONS, PATCHES })).digest('hex').slice(0, 12);
  return path.join(cacheDir(), `librealsense2-${VERSION}-${process.platform}-${process.arch}-${key}`);
}

/** The cached library's paths, or undefined when it is not built (a folder exists only once complete). */
function cachedLibrary() {
  const root = libraryRoot();
  const library = path.join(root, 'lib', SONAME);
  if (!fs.existsSync(library)) return undefined;
  return { root, library, include: path.join(root, 'include') };
}

/** The verified tarball of node-librealsense (downloaded once into the cache). */
function sourceTarball() {
  const tarball = packTarball(PACKAGE);
  const got = sha256File(tarball);
  if (got !== PACKAGE_SHA256) throw new Error(`${PACKAGE}: sha256 ${got} differs from the pinned ${PACKAGE_SHA256}; refused`);
  return tarball;
}

/** Applies scripts/librealsense-patches.js to the extracted source; an edit that does not match once fails. */
function patchSource(source) {
  for (const p of PATCHES) {
    const file = path.join(source, p.file);
    const text = fs.readFileSync(file, 'utf8');
    const at = text.indexOf(p.find);
    if (at < 0 || text.indexOf(p.find, at + 1) >= 0) throw new Error(`patch of ${p.file} does not apply (${p.why})`);
    fs.writeFileSync(file, text.slice(0, at) + p.replace + text.slice(at + p.find.length));
  }
}

const jobs = () => String(os.availableParallelism?.() ?? os.cpus().length);

/**
 * Configures and builds the library in a scratch folder beside the cache entry, copies the shared object
 * (stripped) and the headers into a second scratch folder, then renames that into place: an interrupted
 * build leaves no folder that looks complete.
 */
function buildLibrary({ log = console.log } = {}) {
  const cached = cachedLibrary();
  if (cached) return cached;
  const root = libraryRoot();
  const scratch = fs.mkdtempSync(`${root}.building-`);
  const started = Date.now();
  try {
    execFileSync('tar', ['-xzf', sourceTarball(), '-C', scratch, SOURCE_DIR], { stdio: 'inherit' });
    const source = path.join(scratch, SOURCE_DIR);
    patchSource(source);
    const build = path.join(scratch, 'build');
    fs.mkdirSync(build);
    log(`face-check: building librealsense ${VERSION} from ${PACKAGE} with ${jobs()} jobs (once; cached in ${root})`);
    // Its third-party code warns by the thousand: the output goes to a log, whose end is shown on failure.
    const logFile = path.join(scratch, 'build.log');
    const run = (args) => {
      const fd = fs.openSync(logFile, 'a');
      try {
        execFileSync('cmake', args, { stdio: ['ignore', fd, fd] });
      } catch (err) {
        const tail = fs.readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n');
        throw new Error(`cmake ${args[0]} ${args[1]} failed (${err.message.split('\n')[0]}); the end of its output:\n${tail}`);
      } finally {
        fs.closeSync(fd);
      }
    };
    run(['-S', source, '-B', build, ...CMAKE_OPTIONS]);
    run(['--build', build, '--target', 'realsense2', '--', `-j${jobs()}`]);

    const out = path.join(scratch, 'out');
    fs.mkdirSync(path.join(out, 'lib'), { recursive: true });
    const full = `${SONAME.replace(/\.so\.2$/, '.so')}.${VERSION}`;
    fs.copyFileSync(path.join(build, full), path.join(out, 'lib', full));
    // The debug symbols are most of its size; nothing here debugs librealsense.
    execFileSync('strip', ['--strip-unneeded', path.join(out, 'lib', full)]);
    fs.symlinkSync(full, path.join(out, 'lib', SONAME));
    fs.symlinkSync(SONAME, path.join(out, 'lib', 'librealsense2.so'));
    fs.cpSync(path.join(source, 'include', 'librealsense2'), path.join(out, 'include', 'librealsense2'), { recursive: true });
    fs.writeFileSync(path.join(out, 'build-info.json'), `${JSON.stringify({
      package: PACKAGE, sha256: PACKAGE_SHA256, version: VERSION, arch: process.arch, cmake_options: CMAKE_OPTIONS,
      patches: PATCHES.map((p) => `${p.file}: ${p.why}`),
      seconds: Math.round((Date.now() - started) / 1000), jobs: Number(jobs()),
    }, null, 2)}\n`);
    try {
      fs.renameSync(out, root);
    } catch (err) {
      // Another process finished the same build first: its copy is as good.
      if (!cachedLibrary()) throw err;
    }
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  log(`face-check: librealsense ${VERSION} built in ${Math.round((Date.now() - started) / 1000)} s`);
  return cachedLibrary();
}

module.exports = { libraryRoot, cachedLibrary, buildLibrary, VERSION, SONAME };

if (require.main === module) {
  if (process.argv[2] === '--where') {
    console.log(libraryRoot());
  } else {
    try {
      console.log(buildLibrary().library);
    } catch (err) {
      console.error(`face-check: cannot build librealsense: ${err.message}`);
      process.exit(1);
    }
  }
}
