'use strict';
// Fetches the ONNX Runtime C headers and librealsense2's headers (build-time only) and the models (run-time)
// named in models/manifest.json.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { cacheDir, packTarball, extractEntries, sha256, sha256File } = require('./npm-tarball');
const { rewriteModel, quantisedModel } = require('./onnx-rewrites');
const { tfliteToOnnx } = require('./tflite-to-onnx');

const root = path.resolve(__dirname, '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'models', 'manifest.json'), 'utf8'));
const headerDir = path.join(root, 'deps', 'onnxruntime', 'include');
// Camera SDK headers that no Debian package ships, fetched from npm tarballs: one of the include folders
// native/camera-sources.js and CMakeLists.txt search for native/sources.json's camera_sources headers.
const sdkIncludeDir = path.join(root, 'deps', 'sdk', 'include');
// librealsense2's C and C++ headers: from the librealsense 2.13 source that node-librealsense ships (the
// same tarball scripts/build-librealsense.js builds the tests' library from). The realsense source only
// compiles against them; it opens librealsense2.so.2 at run time.
const REALSENSE_HEADERS = { source: 'node-librealsense@0.2130.0', dir: 'package/librealsense/include/librealsense2' };

/** The sha256 of the file the engine loads: the published model's, or that of its converted and rewritten form. */
const installedSha256 = (m) => m.rewritten_sha256 ?? m.sha256;

/** Every file the engine may load: each model's, and its int8 form's where the manifest has one. */
const installedFiles = () => manifest.models.flatMap((m) => [{ file: m.file, sha256: installedSha256(m) }, ...(m.int8 ? [m.int8] : [])]);

function modelsPresent() {
  return installedFiles().every(({ file, sha256: want }) => {
    const at = path.join(root, 'models', file);
    return fs.existsSync(at) && sha256File(at) === want;
  });
}

/** The int8 calibration table (models/int8-calibration.json), read only when a model has an int8 form. */
let calibration;
const calibrationOf = (id) => {
  calibration ??= JSON.parse(fs.readFileSync(path.join(root, 'models', 'int8-calibration.json'), 'utf8'));
  const table = calibration.models[id];
  if (!table) throw new Error(`models/int8-calibration.json has no table for model ${id}`);
  return table;
};

/** The npm package a model is published in: its own `source`, else the manifest's. */
const sourceOf = (m) => m.source ?? manifest.source;

/**
 * Every model as published, as ONNX: each file is taken from its npm tarball and checked against the
 * manifest's sha256 (a mismatch is refused); a `format: "tflite"` file is then converted to ONNX
 * (scripts/tflite-to-onnx.js), before any rewrite. Returns the ONNX bytes in manifest order.
 */
function publishedModels() {
  const scratch = fs.mkdtempSync(path.join(cacheDir(), 'published-'));
  try {
    const bytes = new Array(manifest.models.length);
    for (const source of new Set(manifest.models.map(sourceOf))) {
      const models = manifest.models.filter((m) => sourceOf(m) === source);
      const files = extractEntries(packTarball(source), models.map((m) => m.tarball_path), path.join(scratch, source.replace(/[/@]/g, '_')));
      models.forEach((m, i) => {
        const published = fs.readFileSync(files[i]);
        const got = sha256(published);
        if (got !== m.sha256) throw new Error(`model ${m.tarball_path} of ${source}: sha256 ${got} differs from the manifest's ${m.sha256}; refused`);
        bytes[manifest.models.indexOf(m)] = m.format === 'tflite' ? tfliteToOnnx(published, { name: m.id }) : published;
      });
    }
    return bytes;
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/** Writes every model as published (converted to ONNX where needed, not rewritten) into destDir as m.file. */
function extractPublishedModels(destDir) {
  fs.mkdirSync(destDir, { recursive: true });
  return publishedModels().map((bytes, i) => {
    const file = path.join(destDir, manifest.models[i].file);
    fs.writeFileSync(file, bytes);
    return file;
  });
}

function fetchModels() {
  if (modelsPresent()) return;
  const published = publishedModels();
  manifest.models.forEach((m, i) => {
    // Same results in less time (scripts/onnx-rewrites.js); the result's sha256 is pinned too, so a
    // change to a rewrite (or to the tflite conversion) is deliberate and shows in the manifest.
    const bytes = m.rewrites?.length ? rewriteModel(published[i], m.rewrites).bytes : published[i];
    const got = sha256(bytes);
    if (got !== installedSha256(m)) {
      throw new Error(`model ${m.file}: ${m.rewrites?.length ? `rewritten (${m.rewrites.join(', ')})` : 'converted'} to sha256 ${got}, ` +
        `the manifest expects ${installedSha256(m)}; refused`);
    }
    fs.writeFileSync(path.join(root, 'models', m.file), bytes);
    if (!m.int8) return;
    // The int8 form: the rewritten float model quantised with the committed calibration table
    // (scripts/onnx-quantise.js), pinned by its own sha256 like every rewrite.
    const int8 = quantisedModel(bytes, calibrationOf(m.id), { exclude: m.int8.exclude, weightMax: m.int8.weight_max });
    const got8 = sha256(int8);
    if (got8 !== m.int8.sha256) {
      throw new Error(`model ${m.int8.file}: quantised to sha256 ${got8}, the manifest expects ${m.int8.sha256}; refused`);
    }
    fs.writeFileSync(path.join(root, 'models', m.int8.file), int8);
  });
  const sources = [...new Set(manifest.models.map(sourceOf))];
  const rewritten = manifest.models.filter((m) => m.rewrites?.length).length;
  const converted = manifest.models.filter((m) => m.format === 'tflite').length;
  console.log(`face-check: ${manifest.models.length} models from ${sources.join(', ')} verified, ` +
    `${converted} converted from tflite, ${rewritten} rewritten for speed, ${manifest.models.filter((m) => m.int8).length} quantised to int8`);
}

function fetchOrtHeaders() {
  const h = manifest.ort_headers;
  if (h.files.every((f) => fs.existsSync(path.join(headerDir, f)))) return headerDir;
  const tarball = packTarball(h.source);
  extractEntries(tarball, h.files.map((f) => h.dir + f), headerDir);
  console.log(`face-check: ONNX Runtime C API headers from ${h.source}`);
  return headerDir;
}

function fetchRealsenseHeaders() {
  const dest = path.join(sdkIncludeDir, 'librealsense2');
  if (fs.existsSync(path.join(dest, 'rs.h'))) return sdkIncludeDir;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-rs-'));
  try {
    execFileSync('tar', ['-xzf', packTarball(REALSENSE_HEADERS.source), '-C', scratch, REALSENSE_HEADERS.dir], { stdio: 'inherit' });
    // Copied whole into a scratch name, then renamed: a half-copied folder never passes for the headers.
    const partial = `${dest}.partial-${process.pid}`;
    fs.rmSync(partial, { recursive: true, force: true });
    fs.cpSync(path.join(scratch, REALSENSE_HEADERS.dir), partial, { recursive: true });
    fs.rmSync(dest, { recursive: true, force: true });
    fs.renameSync(partial, dest);
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  console.log(`face-check: librealsense2 headers from ${REALSENSE_HEADERS.source}`);
  return sdkIncludeDir;
}

/** Every header the native build needs: ONNX Runtime's and the camera SDKs' that no Debian package has. */
function fetchHeaders() {
  fetchOrtHeaders();
  fetchRealsenseHeaders();
}

module.exports = { fetchModels, fetchOrtHeaders, fetchRealsenseHeaders, fetchHeaders, modelsPresent, extractPublishedModels, headerDir, sdkIncludeDir };

if (require.main === module) {
  const what = process.argv[2] || 'all';
  if (what === 'models' || what === 'all') fetchModels();
  if (what === 'headers' || what === 'all') fetchHeaders();
}
