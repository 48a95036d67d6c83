// The package a test cloud serves to the installation command. The cloud serves `npm pack` of this checkout,
// which carries prebuilds/ once `npm run prebuild` has run (CI runs it); it serves no package without both
// board platforms' prebuilds. A checkout with only the arm64 prebuild beside its local build (cmake-js)
// gets that pack with the local build added as this platform's prebuild, so the device runs the addon just
// tested. And why a test that runs the real command cannot run here, if it cannot.
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { missingPlatforms, programPrebuilds } from '../../src/install/device-prebuilds';

const execFileAsync = promisify(execFile);
const repoRoot = path.resolve(__dirname, '..', '..');

/** The tarball to name in `[licensing] package_file`, made in `dir`; undefined when the checkout has both prebuilds. */
export async function packageWithThisAddon(dir: string): Promise<string | undefined> {
  const platform = `${process.platform}-${process.arch}`;
  if (missingPlatforms(programPrebuilds(repoRoot)).length === 0) return undefined;
  const work = path.join(dir, 'package-with-addon');
  fs.mkdirSync(work);
  const { stdout } = await execFileAsync('npm', ['pack', '--silent', '--pack-destination', work], { cwd: repoRoot });
  const tarball = path.join(work, stdout.trim().split('\n').pop()!);
  await execFileAsync('tar', ['-xzf', tarball, '-C', work]);
  const target = path.join(work, 'package', 'prebuilds', platform);
  fs.mkdirSync(target, { recursive: true });
  fs.copyFileSync(path.join(repoRoot, 'build', 'Release', 'face_check.node'), path.join(target, 'face-check.node'));
  await execFileAsync('tar', ['-czf', tarball, '-C', work, 'package']);
  return tarball;
}

/**
 * Why the real installation command against a real cloud cannot run here: it needs curl and sha256sum, and
 * the cloud an arm64 prebuild (cross-compiled by `npm run prebuild`, minutes; CI requires it with
 * FACE_CHECK_REQUIRE_ARM64=1). Undefined when it can.
 */
export function installSkipReason(): string | undefined {
  const missingTools = ['curl', 'sha256sum'].filter((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0);
  if (missingTools.length > 0) return `the installation command needs ${missingTools.join(' and ')} (apt-get install curl coreutils)`;
  const noArm64 = !fs.existsSync(path.join(repoRoot, 'prebuilds', 'linux-arm64')) && process.env.FACE_CHECK_REQUIRE_ARM64 !== '1';
  if (noArm64) return 'the cloud serves only a package with the arm64 prebuild too: run npm run prebuild first';
  return undefined;
}
