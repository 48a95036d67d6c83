// Device mode's licence from the ini's [licence]: a licensed device checks with the cloud before it serves;
// a development device (development = true, no key) serves everything and says so; a device with neither
// does not start.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { ConfigError } from '../../config/load';
import type { Config } from '../../config/types';
import { packageRoot } from '../../package-root';
import { readDeviceFingerprint } from './device-fingerprint';
import { DeviceLicence } from './device-licence';
import { LicenceClient } from './licence-client';
import type { UsageStore } from './licence-usage';
import { storedDocumentPath } from './stored-licence';

export const UNLICENSED_LINE = 'face-check: UNLICENSED development device: every operation is allowed; ' +
  'a production device needs [licence] server_url, key and public_key_file';

/** The longest an orderly stop waits for the cloud to take the usage not yet acknowledged. */
export const STOP_REPORT_MAX_MS = 15_000;

/**
 * How long an orderly stop gives its last usage report: [licence] check_timeout_ms, at most STOP_REPORT_MAX_MS,
 * so the stop stays within the service manager's stop timeout (drain_timeout_ms + 35 s).
 */
export function stopReportMs(config: Config): number {
  return Math.min(config.licence.check_timeout_ms, STOP_REPORT_MAX_MS);
}

export interface DeviceLicenceSetup {
  /** Persons enrolled on the device, all accounts. */
  persons: () => number;
  /** The device's store, where answered requests wait for the cloud's acknowledgement. */
  usage: UsageStore;
  print: (line: string) => void;
  now?: () => Date;
}

/**
 * The started licence of a licensed device (throws LicenceStartError when it may not serve), undefined for a
 * development device (after printing UNLICENSED_LINE); a ConfigError for a device with neither.
 */
export async function startDeviceLicence(config: Config, setup: DeviceLicenceSetup): Promise<DeviceLicence | undefined> {
  if (config.licence.key) {
    const licence = deviceLicenceFromConfig(config, setup);
    await licence.start();
    return licence;
  }
  checkDeviceLicenceConfig(config);
  setup.print(UNLICENSED_LINE);
  return undefined;
}

/** Throws the ConfigError of a device ini with neither a licence nor development = true (checked before anything is created). */
export function checkDeviceLicenceConfig(config: Config): void {
  if (config.server.mode !== 'device' || config.licence.key || config.licence.development) return;
  throw new ConfigError('[licence] key', 'device mode needs a licence ([licence] server_url, key and public_key_file, ' +
    'written by the installation command) or, for development only, [licence] development = true');
}

/** A DeviceLicence for [licence] (not started): the pinned key and the board's fingerprint read now. */
export function deviceLicenceFromConfig(config: Config, setup: DeviceLicenceSetup): DeviceLicence {
  const { licence } = config;
  const publicKey = pinnedPublicKey(licence.public_key_file);
  const fingerprint = readDeviceFingerprint(licence.machine_id_file);
  const client = new LicenceClient({
    serverUrl: licence.server_url, licenceKey: licence.key, publicKey, fingerprint,
    version: programVersion(), timeoutMs: licence.check_timeout_ms, now: setup.now,
  });
  return new DeviceLicence({
    client, publicKey, fingerprint, licenceKey: licence.key,
    offlineGraceHours: licence.offline_grace_hours,
    documentFile: storedDocumentPath(config.storage.path),
    persons: setup.persons, usage: setup.usage, now: setup.now,
    log: (line) => setup.print(`face-check: ${line}`),
  });
}

function pinnedPublicKey(file: string): crypto.KeyObject {
  let pem: string;
  try {
    pem = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError('[licence] public_key_file', `cannot read the cloud's public key: ${(err as Error).message}`);
  }
  try {
    return crypto.createPublicKey(pem);
  } catch (err) {
    throw new ConfigError('[licence] public_key_file', `${file} is not a public key (PEM): ${(err as Error).message}`);
  }
}

function programVersion(): string {
  const manifest = JSON.parse(fs.readFileSync(`${packageRoot()}/package.json`, 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version.slice(0, 64) : 'unknown';
}
