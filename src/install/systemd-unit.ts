// The systemd unit: face-check serve as an unprivileged user that can write its state folder and nothing
// else, restarted when it fails (a licence check that could not reach the cloud at start-up is retried that
// way), started once the network is up (a device checks its licence at start-up). docs/service.md explains
// each hardening line and the ones left out (MemoryDenyWriteExecute breaks V8's JIT, PrivateUsers and
// PrivateDevices the camera, ProcSubset=pid ONNX Runtime's CPU detection).
import path from 'node:path';
import type { ServiceMode } from '../config/types';

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
  /** device: the USB camera is opened (the device ACL lets USB devices through); cloud: no device at all. */
  mode: ServiceMode;
  /** [server] port below 1024: the one capability the service keeps is binding it. */
  privilegedPort: boolean;
  /** Seconds systemd waits after SIGTERM before SIGKILL: longer than the drain and the engine's last analysis. */
  stopTimeoutSec: number;
}

export function systemdUnit(o: SystemdUnitOptions): string {
  for (const p of [o.binary, o.configFile, o.stateDir, o.nodeDir]) {
    // Unit files split ExecStart on spaces and treat % and \ specially: only plain absolute paths go in.
    if (!path.isAbsolute(p) || !/^[A-Za-z0-9_./+-]+$/.test(p)) throw new Error(`not a plain absolute path for the unit: ${JSON.stringify(p)}`);
  }
  for (const g of o.supplementaryGroups) if (!/^[a-z_][a-z0-9_-]*$/.test(g)) throw new Error(`not a group name: ${JSON.stringify(g)}`);
  if (!Number.isInteger(o.stopTimeoutSec) || o.stopTimeoutSec < 1) throw new Error(`not a stop timeout: ${o.stopTimeoutSec}`);
  const capability = o.privilegedPort ? 'CAP_NET_BIND_SERVICE' : '';
  const lines = [
    '[Unit]',
    `Description=face-check face liveness and biometric check (${o.mode})`,
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
    // Converted recordings and fetched photos: inside the one writable folder.
    `Environment=FACE_CHECK_CACHE=${o.stateDir}/cache`,
    `ExecStart=${o.binary} serve --config ${o.configFile}`,
    'Restart=on-failure',
    'RestartSec=10',
    // SIGTERM drains in-flight requests ([server] drain_timeout_ms) before the process exits.
    'KillSignal=SIGTERM',
    `TimeoutStopSec=${o.stopTimeoutSec}`,
    ...(o.stateDir === STANDARD_STATE_DIR ? ['StateDirectory=face-check', 'StateDirectoryMode=0700'] : []),
    `ReadWritePaths=${o.stateDir}`,
    'UMask=0077',
    'NoNewPrivileges=yes',
    'ProtectSystem=strict',
    'ProtectHome=yes',
    'PrivateTmp=yes',
    'PrivateMounts=yes',
    // The camera is a USB device (libfreenect through libusb, /dev/bus/usb): PrivateDevices= would hide it, so
    // a device ACL instead (closed: the standard pseudo devices, plus USB devices on a device).
    'PrivateDevices=no',
    'DevicePolicy=closed',
    ...(o.mode === 'device' ? ['DeviceAllow=char-usb_device rw'] : []),
    'ProtectKernelTunables=yes',
    'ProtectKernelModules=yes',
    'ProtectKernelLogs=yes',
    'ProtectControlGroups=yes',
    'ProtectClock=yes',
    'ProtectHostname=yes',
    'ProtectProc=invisible',
    'RestrictSUIDSGID=yes',
    'LockPersonality=yes',
    'RestrictRealtime=yes',
    'RestrictNamespaces=yes',
    'RemoveIPC=yes',
    // AF_UNIX: child processes' pipes (npm pack); AF_NETLINK: network interfaces and libusb's hot-plug events.
    'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK',
    'SystemCallArchitectures=native',
    // Families nothing in node, ONNX Runtime or libusb calls; EPERM rather than a kill if one ever does.
    'SystemCallFilter=~@clock @cpu-emulation @debug @module @mount @obsolete @raw-io @reboot @swap',
    'SystemCallErrorNumber=EPERM',
    `CapabilityBoundingSet=${capability}`,
    ...(capability ? [`AmbientCapabilities=${capability}`] : []),
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ];
  return lines.join('\n');
}
