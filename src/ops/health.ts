// Readiness: whether this process can serve its API now, check by check. GET /health/ready answers it
// (src/http/plugins/ops-routes.ts); a load balancer or systemd watchdog takes an instance that is not
// ready out of rotation. The answers name states and reasons only: no person, key, account or path.
import type { ServiceMode } from '../config/types';
import type { LicenceStatus } from '../licensing/device/device-licence';

/** What readiness reads of the device licence (src/licensing/device/device-licence.ts). */
export interface LicenceStateSource {
  status(): Pick<LicenceStatus, 'state'>;
}

/** What readiness reads of the camera (src/device/live-face-source.ts). */
export interface CameraStateSource {
  connected(): boolean;
  /** Why it is not (the camera SDK's own words, as the source reported them); empty when unknown. */
  lastError?(): string;
}

/** A camera error without the file paths it may name (a recording, a library): readiness shows no path. */
export function withoutPaths(message: string): string {
  return message.replace(/(^|[\s(=])\/[^\s:,;()]+/g, (_m, lead: string) => `${lead}<path>`);
}

export interface ReadinessSources {
  mode: ServiceMode;
  /** The face engine; the service creates it (its models loaded) before the port opens. */
  engine: unknown;
  /** A cheap read of the store (PostgreSQL: a round trip); rejects once the store is closed or unreachable. */
  probeStore: () => Promise<void>;
  /** Device mode's licence; absent in cloud mode and on a development device. */
  licence?: LicenceStateSource;
  /** Device mode's camera; absent when none is configured ([camera] source = none). */
  camera?: CameraStateSource;
  /** Whether the device expects a camera ([camera] source other than none, or one was handed in). */
  cameraExpected: boolean;
}

export type CheckResult = 'ok' | 'not used' | string;

export interface Readiness {
  ready: boolean;
  /** Per check: 'ok', 'not used' (this mode or set-up has none), or why it fails. */
  checks: { engine: CheckResult; store: CheckResult; licence: CheckResult; camera: CheckResult };
}

const LICENCE_REASONS: Record<Exclude<LicenceStatus['state'], 'licensed'>, string> = {
  starting: 'the licence has not been checked yet',
  refused: 'the licence server refused the licence',
  lapsed: 'the licence could not be checked and its last document ran out',
  closed: 'the licence is closed (shutting down)',
};

export async function readiness(s: ReadinessSources): Promise<Readiness> {
  const engine = s.engine ? 'ok' : 'no face engine';
  let store: CheckResult = 'ok';
  try {
    await s.probeStore();
  } catch (err) {
    store = (err as { httpStatus?: number }).httpStatus === 503 ? 'the database is unavailable' : 'the store is not open';
  }
  let licence: CheckResult = 'not used';
  if (s.licence) {
    const state = s.licence.status().state;
    licence = state === 'licensed' ? 'ok' : LICENCE_REASONS[state];
  }
  let camera: CheckResult = 'not used';
  if (s.mode === 'device' && (s.cameraExpected || s.camera)) {
    const why = s.camera?.lastError?.() ?? '';
    camera = s.camera?.connected() ? 'ok' : `the camera is not connected${why ? `: ${withoutPaths(why)}` : ''}`;
  }
  const checks = { engine, store, licence, camera };
  const ready = Object.values(checks).every((c) => c === 'ok' || c === 'not used');
  return { ready, checks };
}
