// A device-mode configuration licensed against a FakeLicenceServer: a machine id file, the server's pinned
// public key and its licence key, all in a temporary folder.
import fs from 'node:fs';
import path from 'node:path';
import { defaultConfig } from '../../src/config/load';
import type { Config } from '../../src/config/types';
import type { DeviceLicence } from '../../src/licensing/device/device-licence';
import { deviceLicenceFromConfig } from '../../src/licensing/device/device-licence-setup';
import type { UsageStore } from '../../src/licensing/device/licence-usage';
import { DeviceUsageRepository } from '../../src/storage/lmdb/device-usage';
import { lmdb } from '../../src/storage/lmdb/load';
import { BOOTSTRAP_KEY } from './app';
import type { FakeLicenceServer } from './fake-licence-server';

export const MACHINE_ID = 'test-machine-0123456789abcdef';

export function licensedConfig(dir: string, server: FakeLicenceServer, machineId = MACHINE_ID): Config {
  const config = defaultConfig(dir);
  config.server.mode = 'device';
  config.server.port = 0;
  config.storage.path = path.join(dir, 'db');
  config.auth.bootstrap_key = BOOTSTRAP_KEY;
  const machineIdFile = path.join(dir, 'machine-id');
  fs.writeFileSync(machineIdFile, `${machineId}\n`);
  Object.assign(config.licence, {
    server_url: server.url, key: server.licence.key, public_key_file: server.writePublicKey(dir),
    machine_id_file: machineIdFile, check_timeout_ms: 2000,
  });
  return config;
}

/**
 * The device's usage records in an LMDB environment of their own beside the config's store folder (the
 * licence is made before the test's app opens the store); the same folder each time for one config.
 */
export function usageStoreFor(config: Config): DeviceUsageRepository {
  return new DeviceUsageRepository(lmdb.open({ path: `${config.storage.path}-usage`, maxDbs: 4 }));
}

/**
 * The usage records as they are on disk now, read through an environment handle of the test's own. lmdb-js
 * keeps a handle's read snapshot until a timer of its own fires (or that handle writes), so a handle that
 * only reads is reset before each read, or a commit made a moment ago by the device's handle could be missed.
 */
export function usageOnDisk(config: Config): Pick<DeviceUsageRepository, 'pendingRows' | 'inFlight'> {
  const root = lmdb.open({ path: `${config.storage.path}-usage`, maxDbs: 4 });
  const repository = new DeviceUsageRepository(root);
  return {
    pendingRows: () => { root.resetReadTxn(); return repository.pendingRows(); },
    inFlight: () => { root.resetReadTxn(); return repository.inFlight(); },
  };
}

/** A DeviceLicence for the config (not started); its log lines are collected into `lines`. */
export function deviceLicence(config: Config,
  opts: { persons?: () => number; now?: () => Date; lines?: string[]; usage?: UsageStore } = {}): DeviceLicence {
  return deviceLicenceFromConfig(config, {
    persons: opts.persons ?? (() => 0), usage: opts.usage ?? usageStoreFor(config), now: opts.now, print: (line) => opts.lines?.push(line),
  });
}
