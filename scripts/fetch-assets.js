'use strict';
// Fetches the ONNX Runtime C headers (build-time only) and the models (run-time) named in models/manifest.json.
const fs = require('node:fs');
const path = require('node:path');
const { packTarball, extractEntries, sha256, sha256File } = require('./npm-tarball');
const { rewriteModel } = require('./onnx-rewrites');

const root = path.resolve(__dirname, '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'models', 'manifest.json'), 'utf8'));
const headerDir = path.join(root, 'deps', 'onnxruntime', 'include');

/** The sha256 of the file the engine loads: the published model's, or that of its rewritten form. */
const installedSha256 = (m) => m.rewritten_sha256 ?? m.sha256;

function modelsPresent() {
  return manifest.models.every((m) => {
    const file = path.join(root, 'models', m.file);
    return fs.existsSync(file) && sha256File(file) === installedSha256(m);
  });
}

/** Extracts the published models (as published, checked against the manifest's sha256) into destDir. */
function extractPublishedModels(destDir) {
  const files = extractEntries(packTarball(manifest.source), manifest.models.map((m) => m.tarball_path), destDir);
  manifest.models.forEach((m, i) => {
    const got = sha256File(files[i]);
    if (got !== m.sha256) {
      fs.rmSync(files[i], { force: true });
      throw new Error(`model ${m.file}: sha256 ${got} differs from the manifest's ${m.sha256}; refused`);
    }
  });
  return files;
}

function fetchModels() {
  if (modelsPresent()) return;
  const files = extractPublishedModels(path.join(root, 'models'));
  manifest.models.forEach((m, i) => {
    if (!m.rewrites?.length) return;
    // Same results in less time (scripts/onnx-rewrites.js); the result's sha256 is pinned too, so a
    // change to a rewrite is deliberate and shows in the manifest.
    const { bytes } = rewriteModel(fs.readFileSync(files[i]), m.rewrites);
    const got = sha256(bytes);
    if (got !== m.rewritten_sha256) {
      fs.rmSync(files[i], { force: true });
      throw new Error(`model ${m.file}: rewritten (${m.rewrites.join(', ')}) to sha256 ${got}, the manifest expects ${m.rewritten_sha256}; refused`);
    }
    fs.writeFileSync(files[i], bytes);
  });
  const rewritten = manifest.models.filter((m) => m.rewrites?.length).length;
  console.log(`face-check: ${manifest.models.length} models from ${manifest.source} verified, ${rewritten} rewritten for speed`);
}

function fetchOrtHeaders() {
  const h = manifest.ort_headers;
  if (h.files.every((f) => fs.existsSync(path.join(headerDir, f)))) return headerDir;
  const tarball = packTarball(h.source);
  extractEntries(tarball, h.files.map((f) => h.dir + f), headerDir);
  console.log(`face-check: ONNX Runtime C API headers from ${h.source}`);
  return headerDir;
}

module.exports = { fetchModels, fetchOrtHeaders, modelsPresent, extractPublishedModels, headerDir };

if (require.main === module) {
  const what = process.argv[2] || 'all';
  if (what === 'models' || what === 'all') fetchModels();
  if (what === 'headers' || what === 'all') fetchOrtHeaders();
}
