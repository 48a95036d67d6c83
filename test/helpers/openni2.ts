// The openni2 source's test bench: Debian's libOpenNI2 with the project's virtual OpenNI2 driver
// (native/test/openni2_virtual_driver, libFaceCheckVirtual.so) in its driver folder.
//
// OpenNI2 looks for drivers in OpenNI2/Drivers beside the libOpenNI2 it was loaded from (dladdr; Debian's
// build reads /etc/openni2/OpenNI.ini, whose Repository key is unset by default, and loads lib*.so.0
// files). So a folder holding a symbolic link to the system's libOpenNI2.so.0 and, under OpenNI2/Drivers,
// links to the virtual driver and to Debian's file driver (libOniFile, for .oni playback) is a complete
// OpenNI2 installation whose only device is the virtual one: nothing is written into /usr or /etc.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { cameraSourceNames } from '../../src/device/camera-catalog';
import { packageRoot } from '../../src/package-root';

const LIB_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib/arm-linux-gnueabihf', '/usr/local/lib', '/usr/lib'];

export interface OpenNI2Bench {
  /** The libOpenNI2.so.0 to give the source ([camera] openni2_library). */
  library: string;
  dir: string;
}

/**
 * Why the openni2 tests cannot run here (undefined: they can); `installed` says whether OpenNI2 itself is
 * (then only this checkout is at fault, and the tests fail rather than skip).
 */
export function openni2Missing(): { reason: string; installed: boolean } | undefined {
  if (!systemLibrary()) return { reason: 'libopenni2 is not installed (apt-get install libopenni2-dev libopenni2-0)', installed: false };
  if (!fs.existsSync('/usr/include/openni2/Driver/OniDriverAPI.h')) return { reason: 'the OpenNI2 headers are not installed (apt-get install libopenni2-dev)', installed: false };
  if (!cameraSourceNames().includes('openni2')) return { reason: 'the addon was built without the OpenNI2 headers (rebuild: npm run build:native)', installed: true };
  return undefined;
}

function systemLibrary(): string | undefined {
  return LIB_DIRS.map((d) => path.join(d, 'libOpenNI2.so.0')).find((f) => fs.existsSync(f));
}

/** The virtual driver: CMake's build beside the addon, or compiled here with g++ (a node-gyp build). */
function virtualDriver(dir: string): string {
  const built = path.join(packageRoot(), 'build', 'Release', 'libFaceCheckVirtual.so');
  if (fs.existsSync(built)) return built;
  const out = path.join(dir, 'libFaceCheckVirtual.so');
  const sources = (require(path.join(packageRoot(), 'native', 'sources.json')) as Record<string, string[]>).test_openni2_virtual_driver;
  const r = spawnSync('g++', ['-std=gnu++17', '-O2', '-fPIC', '-shared', '-fvisibility=hidden', '-I/usr/include/openni2',
    `-I${path.join(packageRoot(), 'native')}`, ...sources.map((s) => path.join(packageRoot(), s)), '-o', out, '-lpthread'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cannot build the virtual OpenNI2 driver: ${r.stderr || r.error}`);
  return out;
}

/** An OpenNI2 installation in `dir` whose drivers are the virtual one and the .oni file driver. */
export function openni2Bench(dir: string): OpenNI2Bench {
  const system = systemLibrary()!;
  const drivers = path.join(dir, 'OpenNI2', 'Drivers');
  fs.mkdirSync(drivers, { recursive: true });
  const library = path.join(dir, 'libOpenNI2.so.0');
  fs.symlinkSync(system, library);
  fs.symlinkSync(virtualDriver(dir), path.join(drivers, 'libFaceCheckVirtual.so.0'));
  fs.symlinkSync(path.join(path.dirname(system), 'OpenNI2', 'Drivers', 'libOniFile.so.0'), path.join(drivers, 'libOniFile.so.0'));
  return { library, dir };
}

/** URI of a virtual device playing the face-check recording `dir` (options: see virtual_driver.cpp). */
export function virtualUri(dir: string, options: Record<string, string | number> = {}): string {
  const opts = Object.entries(options).map(([k, v]) => `${k}=${v}`).join(',');
  return `face-check-virtual:${dir}${opts ? `#${opts}` : ''}`;
}
