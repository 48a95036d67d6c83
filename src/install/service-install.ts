// Installing face-check as a systemd service: the layout (/etc/face-check for the ini, /var/lib/face-check
// the only folder it writes), the check of the ini it will run with, the unit, the Kinect's udev rule, and
// the privileged steps (the user, ownership, udev and systemd reloads, enable and restart). Under a prefix
// (a trial or a test root) everything is written below it and the privileged steps are only printed; as
// root on / they run. `face-check service install` and `face-check device install` both end here, so one
// code path installs the service. Re-running rewrites what it wrote and keeps the state folder's contents.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, parseConfig } from '../config/load';
import type { Config } from '../config/types';
import { SERVICE_NAME, SERVICE_USER, STANDARD_STATE_DIR, systemdUnit } from './systemd-unit';
import { CAMERA_RULE_FILE, cameraUdevRule, cameraVendors, FORMER_RULE_FILES } from './udev-rule';
import { cameraCatalog, findCameraSource } from '../device/camera-catalog';
import { withStoragePathIn } from './installed-storage-path';

export interface InstallLog {
  out(line: string): void;
  err(line: string): void;
}

export class ServiceInstallError extends Error {}

export interface ServiceLayout {
  /** '' for the real root, else the folder everything is installed under. */
  prefix: string;
  etcDir: string;
  iniFile: string;
  stateDir: string;
  unitFile: string;
  udevRuleFile: string;
  /** The program ExecStart runs: where `npm install -g` put it. */
  binary: string;
}

/** Groups that give the camera's device nodes: libfreenect's udev rules use plugdev; V4L uses video. */
const CAMERA_GROUPS = ['plugdev', 'video'];
/** Where `npm install -g` puts the program: the installation command's --prefix /usr/local, else a distribution's. */
const BINARY_CANDIDATES = ['/usr/local/bin/face-check', '/usr/bin/face-check'];
/** How long the engine may still finish an analysis after the drain (src/start/start-service.ts closeWhenIdle), plus slack. */
const STOP_MARGIN_SEC = 35;

export function serviceLayout(root: string): ServiceLayout {
  const resolved = path.resolve(root);
  const prefix = resolved === '/' ? '' : resolved;
  const binary = BINARY_CANDIDATES.map((b) => `${prefix}${b}`).find((b) => fs.existsSync(b)) ?? `${prefix}${BINARY_CANDIDATES[0]}`;
  return {
    prefix,
    etcDir: `${prefix}/etc/face-check`,
    iniFile: `${prefix}/etc/face-check/face-check.ini`,
    stateDir: `${prefix}${STANDARD_STATE_DIR}`,
    unitFile: `${prefix}/etc/systemd/system/${SERVICE_NAME}.service`,
    udevRuleFile: `${prefix}/etc/udev/rules.d/${CAMERA_RULE_FILE}`,
    binary,
  };
}

/**
 * Copies `source` to the layout's ini (0640, root:face-check once the steps ran), after checking it as the
 * service will read it. The replaced ini, when different, is kept as face-check.ini.previous.
 */
export function installConfigFile(source: string, layout: ServiceLayout, log: InstallLog): void {
  const asWritten = loadConfig(source); // its errors name the file the operator wrote
  const original = fs.readFileSync(source, 'utf8');
  const rewritten = withStoragePathIn(original, layout.stateDir);
  const text = rewritten ?? original;
  if (rewritten !== undefined) {
    log.out(`[storage] path ${asWritten.storage.path} is beside the ini: the service keeps its store in ${layout.stateDir} ` +
      '([storage] path set so in the installed ini)');
  }
  const asInstalled = parseConfig(text, layout.etcDir, layout.iniFile);
  const moved = relativePathKeys(rewritten === undefined ? asWritten : parseConfig(text, path.dirname(path.resolve(source)), source), asInstalled);
  if (moved.length) {
    throw new ServiceInstallError(`${source}: ${moved.join(', ')}: a relative path names another file once the ini ` +
      `is in ${layout.etcDir}; write it as an absolute path`);
  }
  checkStoragePath(asInstalled, layout, source);
  makeDir(layout.etcDir, 0o750);
  const previous = fs.existsSync(layout.iniFile) ? fs.readFileSync(layout.iniFile, 'utf8') : undefined;
  if (previous !== undefined && previous !== text) {
    writeFileAtomic(`${layout.iniFile}.previous`, previous, 0o640);
    log.out(`kept the former ${layout.iniFile} as ${layout.iniFile}.previous`);
  }
  writeFileAtomic(layout.iniFile, text, 0o640);
  log.out(`wrote ${layout.iniFile} (0640: root and the service's group)`);
}

/**
 * Installs the service around the ini already at layout.iniFile: checks it, makes the folders, writes the
 * unit and (device mode) the udev rule, then runs or prints the privileged steps.
 */
export function installService(layout: ServiceLayout, log: InstallLog): void {
  const config = checkInstalledConfig(layout, log);

  makeDir(layout.etcDir, 0o750);
  makeDir(layout.stateDir, 0o700);
  log.out(`state folder ${layout.stateDir} (0700; its contents kept)`);

  const device = config.server.mode === 'device';
  makeDir(path.dirname(layout.unitFile), 0o755);
  writeFileAtomic(layout.unitFile, systemdUnit({
    binary: layout.binary,
    configFile: layout.iniFile,
    stateDir: layout.stateDir,
    nodeDir: path.dirname(process.execPath),
    supplementaryGroups: device ? existingGroups(layout.prefix, CAMERA_GROUPS) : [],
    mode: config.server.mode,
    privilegedPort: config.server.port > 0 && config.server.port < 1024,
    stopTimeoutSec: Math.ceil(config.server.drain_timeout_ms / 1000) + STOP_MARGIN_SEC,
  }), 0o644);
  log.out(`wrote ${layout.unitFile}`);
  if (device) {
    makeDir(path.dirname(layout.udevRuleFile), 0o755);
    writeFileAtomic(layout.udevRuleFile, cameraUdevRule(SERVICE_USER, cameraCatalog()), 0o644);
    log.out(`wrote ${layout.udevRuleFile} (the depth cameras' USB devices, vendors ${cameraVendors(cameraCatalog()).join(', ')}, for the group ${SERVICE_USER})`);
    for (const former of FORMER_RULE_FILES) fs.rmSync(path.join(path.dirname(layout.udevRuleFile), former), { force: true });
  }
  for (const file of [layout.binary, process.execPath]) {
    // ProtectHome=yes: the service sees neither /home nor /root.
    if (/^\/(root|home)(\/|$)/.test(file)) log.err(`face-check: warning: the service cannot see ${file} (ProtectHome=yes); install it system-wide`);
  }
  if (!fs.existsSync(layout.binary)) {
    log.err(`face-check: warning: ${layout.binary} does not exist yet; the service starts once the package is ` +
      `installed there (npm install -g --prefix ${layout.prefix}/usr/local)`);
  }

  const steps = privilegedSteps(layout, device);
  const isRoot = process.getuid?.() === 0;
  if (layout.prefix === '' && isRoot && commandExists('systemctl')) {
    if (!userExists(SERVICE_USER)) run(log, steps.createUser);
    for (const step of steps.always) run(log, step);
    for (const step of steps.bestEffort) runBestEffort(log, step);
    for (const step of steps.start) run(log, step);
    log.out(`face-check is installed and running: systemctl status ${SERVICE_NAME}, journalctl -u ${SERVICE_NAME}`);
  } else {
    const why = layout.prefix !== '' ? `installed under ${layout.prefix}` : !isRoot ? 'not running as root' : 'systemctl not found';
    log.out(`${why}: to finish, run as root:`);
    log.out(`  id ${SERVICE_USER} >/dev/null 2>&1 || ${steps.createUser.join(' ')}`);
    for (const step of [...steps.always, ...steps.bestEffort, ...steps.start]) log.out(`  ${step.join(' ')}`);
  }
}

/** The ini as the service will read it: it loads, and its store is in the one folder the unit lets it write. */
function checkInstalledConfig(layout: ServiceLayout, log: InstallLog): Config {
  if (!fs.existsSync(layout.iniFile)) {
    throw new ServiceInstallError(`no configuration at ${layout.iniFile}: give one with --config FILE ` +
      '(a licensed device: run the licence\'s installation command instead)');
  }
  const config = loadConfig(layout.iniFile);
  checkStoragePath(config, layout, layout.iniFile);
  const { storage, licence, server } = config;
  if (storage.key_file && !isInside(storage.key_file, layout.stateDir) && !fs.existsSync(storage.key_file)) {
    log.err(`face-check: warning: [storage] key_file ${storage.key_file} does not exist and is outside ${layout.stateDir}: ` +
      'the service cannot create it there (ProtectSystem=strict)');
  }
  if (server.mode === 'device' && licence.development) {
    log.err('face-check: warning: [licence] development = true: installing an unlicensed development device ' +
      '(every operation allowed; not for production)');
  } else if (server.mode === 'device' && !licence.key) {
    log.err('face-check: warning: no [licence] key and no [licence] development = true: the service will not start ' +
      '(exit 78) until the licence\'s installation command has run');
  }
  return config;
}

function checkStoragePath(config: Config, layout: ServiceLayout, file: string): void {
  if (!isInside(config.storage.path, layout.stateDir)) {
    throw new ServiceInstallError(`${file}: [storage] path is ${config.storage.path}, but the service may write ` +
      `only ${layout.stateDir} (ReadWritePaths=): set [storage] path = ${layout.stateDir}`);
  }
}

/** Path keys whose value resolves differently from the ini's own folder and from /etc/face-check. */
function relativePathKeys(asWritten: Config, asInstalled: Config): string[] {
  const keys: [string, (c: Config) => string][] = [
    ['[storage] path', (c) => c.storage.path],
    ['[storage] key_file', (c) => c.storage.key_file],
    ...cameraPathKeys(asWritten),
    ['[licence] public_key_file', (c) => c.licence.public_key_file],
    ['[licence] machine_id_file', (c) => c.licence.machine_id_file],
    ['[licensing] package_file', (c) => c.licensing.package_file],
  ];
  return keys.filter(([, value]) => value(asWritten) !== value(asInstalled)).map(([key]) => key);
}

/** The path options of the ini's [camera.<source>] sections, resolved against each config's folder. */
function cameraPathKeys(config: Config): [string, (c: Config) => string][] {
  const out: [string, (c: Config) => string][] = [];
  for (const [name, section] of Object.entries(config.camera.sources)) {
    for (const key of Object.keys(section)) {
      if (!findCameraSource(name)?.options.find((o) => o.key === key)?.path) continue;
      out.push([`[camera.${name}] ${key}`, (c) => String(c.camera.sources[name]?.[key] ?? '').split(',')
        .map((p) => p.trim()).filter(Boolean).map((p) => path.resolve(c.camera.base_dir, p)).join(',')]);
    }
  }
  return out;
}

function isInside(file: string, dir: string): boolean {
  const relative = path.relative(dir, file);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

interface PrivilegedSteps {
  createUser: string[];
  always: string[][];
  /** udev may not run (a container): the camera then needs a replug, the service still installs. */
  bestEffort: string[][];
  start: string[][];
}

function privilegedSteps(layout: ServiceLayout, device: boolean): PrivilegedSteps {
  const iniMode = fs.statSync(layout.iniFile).mode & 0o777;
  return {
    createUser: ['useradd', '--system', '--user-group', '--home-dir', layout.stateDir, '--no-create-home',
      '--shell', '/usr/sbin/nologin', SERVICE_USER],
    always: [
      ['chown', `root:${SERVICE_USER}`, layout.etcDir],
      // A group-readable ini (service install, 0640) stays root's; a 0600 one (device install) is the service's.
      ['chown', iniMode & 0o040 ? `root:${SERVICE_USER}` : `${SERVICE_USER}:${SERVICE_USER}`, layout.iniFile],
      ['chown', '-R', `${SERVICE_USER}:${SERVICE_USER}`, layout.stateDir],
    ],
    bestEffort: device
      ? [['udevadm', 'control', '--reload'],
        ...cameraVendors(cameraCatalog()).map((vendor) => ['udevadm', 'trigger', '--subsystem-match=usb', `--attr-match=idVendor=${vendor}`])]
      : [],
    start: [
      ['systemctl', 'daemon-reload'],
      ['systemctl', 'enable', SERVICE_NAME],
      // restart, not start: a re-run's new ini takes effect.
      ['systemctl', 'restart', SERVICE_NAME],
    ],
  };
}

/** The folder with `mode` (also when it existed); missing parents get the usual 0755, not the folder's mode. */
export function makeDir(dir: string, mode: number): void {
  fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o755 });
  fs.mkdirSync(dir, { recursive: true, mode });
  fs.chmodSync(dir, mode);
}

/** Temp file then rename: a crash never leaves half a file; the mode is set whatever the umask. */
export function writeFileAtomic(file: string, text: string, mode: number): void {
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, text, { mode });
  fs.chmodSync(temp, mode);
  fs.renameSync(temp, file);
}

/** A unit naming a group that does not exist fails to start: only those of the target system's /etc/group. */
function existingGroups(prefix: string, wanted: string[]): string[] {
  let groupFile: string;
  try {
    groupFile = fs.readFileSync(`${prefix}/etc/group`, 'utf8');
  } catch {
    return wanted; // an empty test root: the unit as a real board gets it
  }
  const names = new Set(groupFile.split('\n').map((line) => line.split(':')[0]));
  return wanted.filter((g) => names.has(g));
}

function commandExists(name: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => dir && fs.existsSync(path.join(dir, name)));
}

function userExists(name: string): boolean {
  try {
    execFileSync('id', [name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function run(log: InstallLog, [command, ...args]: string[]): void {
  log.out(`$ ${command} ${args.join(' ')}`);
  execFileSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
}

function runBestEffort(log: InstallLog, step: string[]): void {
  try {
    run(log, step);
  } catch (err) {
    log.err(`face-check: warning: ${step.join(' ')} failed (${(err as Error).message}); replug the camera`);
  }
}
