// The systemd unit of a device: face-check serve as an unprivileged user that can write its state folder
// and nothing else, restarted when it fails (a licence check that could not reach the cloud at start-up
// is retried that way), started once the network is up (the licence is checked at start-up).
import path from 'node:path';

export const SERVICE_NAME = 'face-check';
export const SERVICE_USER = 'face-check';
/** The standard state folder; systemd's StateDirectory= names it relative to /var/lib. */
export const STANDARD_STATE_DIR = '/var/lib/face-check';

export interface SystemdUnitOptions {
  /** The face-check executable (absolute). */
  binary: string;
  /** The device ini (absolute). */
  configFile: string;
  /** The only folder the service may write (absolute). */
  stateDir: string;
  /** Folder of the node executable: `face-check` starts with `#!/usr/bin/env node`. */
  nodeDir: string;
  /** Groups for the camera's device nodes (USB: plugdev; V4L: video); only groups that exist may be named. */
  supplementaryGroups: string[];
}

export function systemdUnit(o: SystemdUnitOptions): string {
  for (const p of [o.binary, o.configFile, o.stateDir, o.nodeDir]) {
    // Unit files split ExecStart on spaces and treat % and \ specially: only plain absolute paths go in.
    if (!path.isAbsolute(p) || !/^[A-Za-z0-9_./+-]+$/.test(p)) throw new Error(`not a plain absolute path for the unit: ${JSON.stringify(p)}`);
  }
  for (const g of o.supplementaryGroups) if (!/^[a-z_][a-z0-9_-]*$/.test(g)) throw new Error(`not a group name: ${JSON.stringify(g)}`);
  const lines = [
    '[Unit]',
    'Description=face-check face liveness and biometric check (device)',
    // The licence is checked with the cloud at start-up.
    'Wants=network-online.target',
    'After=network-online.target',
    '',
    '[Service]',
    'Type=simple',
    `User=${SERVICE_USER}`,
    `Group=${SERVICE_USER}`,
    ...(o.supplementaryGroups.length ? [`SupplementaryGroups=${o.supplementaryGroups.join(' ')}`] : []),
    `Environment=PATH=${o.nodeDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    'Environment=NODE_ENV=production',
    `ExecStart=${o.binary} serve --config ${o.configFile}`,
    'Restart=on-failure',
    'RestartSec=10',
    // SIGTERM drains in-flight requests ([server] drain_timeout_ms) before the process exits.
    'KillSignal=SIGTERM',
    'TimeoutStopSec=30',
    ...(o.stateDir === STANDARD_STATE_DIR ? ['StateDirectory=face-check', 'StateDirectoryMode=0700'] : []),
    `ReadWritePaths=${o.stateDir}`,
    'UMask=0077',
    'NoNewPrivileges=yes',
    'ProtectSystem=strict',
    'ProtectHome=yes',
    'PrivateTmp=yes',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ];
  return lines.join('\n');
}
