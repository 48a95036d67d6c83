// Every ini key the program accepts: its default and how its text is checked. A key missing here is an
// unknown key and stops start-up, so this table is the complete list (the README's ini reference mirrors it).
import type { Config } from './types';

/** Turns the ini text of one key into its typed value or throws with a reason (the caller adds the key). */
export type Parser<T> = (raw: string) => T;

export type SectionSchema<S> = { [K in keyof S]: { default: S[K]; parse: Parser<S[K]> } };
/** Fields the loader fills itself, not ini keys: the camera sources' own sections and the ini's folder. */
type LoaderFilled = { camera: 'sources' | 'base_dir' };
export type ConfigSchema = {
  [K in keyof Config]: SectionSchema<K extends keyof LoaderFilled ? Omit<Config[K], LoaderFilled[K]> : Config[K]>;
};

export function integer(min: number, max: number): Parser<number> {
  return (raw) => {
    if (!/^-?\d+$/.test(raw)) throw new Error(`expected an integer, got "${raw}"`);
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new Error(`expected an integer from ${min} to ${max}, got ${raw}`);
    return n;
  };
}

export function decimal(min: number, max: number): Parser<number> {
  return (raw) => {
    if (!/^-?(\d+(\.\d*)?|\.\d+)$/.test(raw)) throw new Error(`expected a number, got "${raw}"`);
    const n = Number(raw);
    if (n < min || n > max) throw new Error(`expected a number from ${min} to ${max}, got ${raw}`);
    return n;
  };
}

export function oneOf<T extends string>(...values: T[]): Parser<T> {
  return (raw) => {
    if (!(values as string[]).includes(raw)) throw new Error(`expected one of ${values.join('|')}, got "${raw}"`);
    return raw as T;
  };
}

export function text(opts: { allowEmpty: boolean }): Parser<string> {
  return (raw) => {
    if (!opts.allowEmpty && raw.length === 0) throw new Error('must not be empty');
    return raw;
  };
}

/** true | false (ini also accepts them unquoted). */
export const flag: Parser<boolean> = (raw) => {
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new Error(`expected true or false, got "${raw}"`);
};

const percent = decimal(0, 100);
const MiB = 1024 * 1024;

/** A camera source's name: which names exist is the addon's to say (checked at start). */
const sourceName: Parser<string> = (raw) => {
  if (!/^[a-z][a-z0-9_]*$/.test(raw)) throw new Error(`expected a camera source name (lower case, e.g. openni2) or none, got ${JSON.stringify(raw)}`);
  return raw;
};

export const configSchema: ConfigSchema = {
  server: {
    mode: { default: 'cloud', parse: oneOf('device', 'cloud') },
    host: { default: '127.0.0.1', parse: text({ allowEmpty: false }) },
    port: { default: 8080, parse: integer(0, 65535) },
    // Two base64 images of max_bytes each plus JSON framing fit (compare sends two).
    body_limit_bytes: { default: 24 * MiB, parse: integer(1024, 1024 * MiB) },
    // Timeouts and overload bounds: README "Limits and hostile input".
    request_timeout_ms: { default: 30_000, parse: integer(100, 3_600_000) },
    headers_timeout_ms: { default: 10_000, parse: integer(100, 3_600_000) },
    keep_alive_timeout_ms: { default: 5_000, parse: integer(1, 3_600_000) },
    idle_timeout_ms: { default: 120_000, parse: integer(0, 3_600_000) },
    drain_timeout_ms: { default: 10_000, parse: integer(0, 3_600_000) },
    max_event_loop_delay_ms: { default: 1_000, parse: integer(0, 600_000) },
    max_engine_queue: { default: 64, parse: integer(0, 1_000_000) },
    trust_proxy: { default: '', parse: proxyList },
  },
  storage: {
    path: { default: './data', parse: text({ allowEmpty: false }) },
    // Empty: <path>/face-check.key (src/storage/lmdb/store.ts).
    key_file: { default: '', parse: text({ allowEmpty: true }) },
    // lmdb: one process on a local folder; postgres: several cloud nodes over one database (docs/postgres.md).
    backend: { default: 'lmdb', parse: oneOf('lmdb', 'postgres') },
    postgres_url: { default: '', parse: text({ allowEmpty: true }) },
    postgres_pool_size: { default: 10, parse: integer(1, 1000) },
    postgres_statement_timeout_ms: { default: 5_000, parse: integer(100, 600_000) },
    postgres_connect_timeout_ms: { default: 3_000, parse: integer(100, 600_000) },
    // postgres: the node's copy of the sealed templates in <path>/gallery-cache (src/storage/postgres/gallery-cache.ts).
    gallery_cache: { default: true, parse: flag },
  },
  auth: {
    bootstrap_key: {
      default: '',
      parse: (raw) => {
        if (raw !== '' && raw.length < 16) throw new Error('must be empty or at least 16 characters');
        return raw;
      },
    },
    public_base_url: {
      default: '',
      parse: (raw) => {
        if (raw !== '' && !/^https?:\/\/[^/?#\s]+$/.test(raw)) {
          throw new Error(`expected empty or scheme://host[:port] without a path, got "${raw}"`);
        }
        return raw;
      },
    },
    signature_max_age_seconds: { default: 300, parse: integer(1, 86400) },
  },
  matching: {
    identify_threshold: { default: 98, parse: percent },
    verify_threshold: { default: 80, parse: percent },
    compare_threshold: { default: 80, parse: percent },
    duplicate_threshold: { default: 98, parse: percent },
  },
  image: {
    max_bytes: { default: 8 * MiB, parse: integer(1, 256 * MiB) },
    // 50 MP admits 7360x4912 camera photos; the decoder refuses larger ones before allocating.
    max_pixels: { default: 50_000_000, parse: integer(1, 268_402_689) },
    // Three images at max_pixels (450 MB of decoded RGB): src/image/pixel-budget.ts.
    max_pixels_in_flight: { default: 150_000_000, parse: integer(1, 16_000_000_000) },
  },
  quality: {
    min_face_size: { default: 80, parse: decimal(0, 100_000) },
    max_yaw: { default: 30, parse: decimal(0, 180) },
    max_pitch: { default: 30, parse: decimal(0, 180) },
    max_roll: { default: 20, parse: decimal(0, 180) },
    min_brightness: { default: 60, parse: decimal(0, 255) },
    max_brightness: { default: 200, parse: decimal(0, 255) },
    min_sharpness: { default: 40, parse: decimal(0, 1e9) },
    min_eye_openness: { default: 0.3, parse: decimal(0, 1) },
    max_mouth_openness: { default: 0.2, parse: decimal(0, 10) },
    max_sunglasses: { default: 0.5, parse: decimal(0, 1) },
    background_face_ratio: { default: 0.5, parse: decimal(0, 1) },
    min_image_brightness: { default: 30, parse: decimal(0, 255) },
    max_image_brightness: { default: 225, parse: decimal(0, 255) },
    min_image_sharpness: { default: 15, parse: decimal(0, 1e9) },
  },
  // [camera] and [liveness]: device mode; docs/device.md documents every key, and each source's
  // [camera.<source>] section.
  camera: {
    // A source of the addon's registry, or none; checked against it at start (src/device/camera-settings.ts),
    // as are the [camera.<source>] sections.
    source: { default: 'none', parse: sourceName },
    fx: { default: 0, parse: decimal(0, 100_000) },
    fy: { default: 0, parse: decimal(0, 100_000) },
    cx: { default: 0, parse: decimal(0, 100_000) },
    cy: { default: 0, parse: decimal(0, 100_000) },
    workers: { default: 1, parse: integer(1, 8) },
    reconnect_ms: { default: 1000, parse: integer(10, 600_000) },
    idle_detect_fps: { default: 5, parse: decimal(0, 120) },
  },
  liveness: {
    min_face_px: { default: 60, parse: decimal(0, 10_000) },
    max_distance_mm: { default: 1200, parse: decimal(0, 10_000) },
    min_depth_coverage: { default: 0.6, parse: decimal(0, 1) },
    min_face_width_mm: { default: 95, parse: decimal(0, 1000) },
    max_face_width_mm: { default: 185, parse: decimal(0, 1000) },
    min_plane_rms_mm: { default: 5, parse: decimal(0, 100) },
    min_nose_relief_mm: { default: 6, parse: decimal(-100, 100) },
    max_nose_relief_mm: { default: 45, parse: decimal(0, 200) },
    max_eye_recess_mm: { default: 18, parse: decimal(0, 200) },
    max_depth_step_share: { default: 0.01, parse: decimal(0, 1) },
    max_nose_offset: { default: 0.8, parse: decimal(0, 100) },
    max_yaw: { default: 35, parse: decimal(0, 90) },
    max_pitch: { default: 30, parse: decimal(0, 90) },
    min_infrared_pattern: { default: 0.04, parse: decimal(0, 10) },
    window_frames: { default: 5, parse: integer(1, 300) },
    min_pass_frames: { default: 4, parse: integer(1, 300) },
    max_gap_ms: { default: 250, parse: integer(1, 60_000) },
    min_micro_motion_mm: { default: 0, parse: decimal(0, 100) },
    require_blink: { default: false, parse: flag },
    blink_closed: { default: 0.3, parse: decimal(0, 1) },
    blink_open: { default: 0.6, parse: decimal(0, 1) },
    blink_window_ms: { default: 5000, parse: integer(100, 600_000) },
    colour_min: { default: 0, parse: decimal(0, 1) },
    allow_colour_only: { default: false, parse: flag },
    colour_only_threshold: { default: 0.5, parse: decimal(0, 1) },
    colour_every: { default: 1, parse: integer(0, 1000) },
    recency_ms: { default: 1000, parse: integer(1, 60_000) },
    face_key_ttl_s: { default: 60, parse: integer(1, 86_400) },
  },
  quota: {
    requests_per_day: { default: 0, parse: integer(0, Number.MAX_SAFE_INTEGER) },
  },
  // [plans], [accounts], [licensing]: cloud mode (the operators' accounts and the licence server).
  plans: {
    free_requests_per_day: { default: 100, parse: integer(0, Number.MAX_SAFE_INTEGER) },
    free_max_licences: { default: 1, parse: integer(0, 1_000_000) },
    free_activation_code: { default: true, parse: flag },
    paid_requests_per_day: { default: 0, parse: integer(0, Number.MAX_SAFE_INTEGER) },
    paid_max_licences: { default: 0, parse: integer(0, 1_000_000) },
    paid_activation_code: { default: false, parse: flag },
  },
  accounts: {
    registration: { default: 'open', parse: oneOf('open', 'activation-code', 'invitation', 'closed') },
    registrations_per_address: { default: 3, parse: integer(1, 1_000_000) },
    registrations_per_network: { default: 10, parse: integer(1, 1_000_000) },
    registration_window_hours: { default: 24, parse: integer(1, 24 * 30) },
    min_password_length: { default: 10, parse: integer(8, 1024) },
    session_idle_minutes: { default: 30, parse: integer(1, 7 * 24 * 60) },
    session_max_hours: { default: 12, parse: integer(1, 24 * 30) },
    sign_in_max_failures: { default: 5, parse: integer(1, 1000) },
    sign_in_address_max_failures: { default: 20, parse: integer(1, 100_000) },
    sign_in_account_max_failures: { default: 100, parse: integer(1, 1_000_000) },
    sign_in_lockout_minutes: { default: 15, parse: integer(1, 24 * 60) },
    known_addresses_per_account: { default: 10, parse: integer(1, 1000) },
  },
  licensing: {
    public_url: { default: '', parse: httpUrl },
    // How long a grant change or a revocation takes at most to reach a running device (docs/licences.md).
    check_interval_seconds: { default: 300, parse: integer(1, 30 * 86400) },
    document_valid_seconds: { default: 86400, parse: integer(1, 365 * 86400) },
    package_file: { default: '', parse: text({ allowEmpty: true }) },
  },
  // [licence]: device mode (written by the installation command).
  licence: {
    server_url: { default: '', parse: httpUrl },
    key: {
      default: '',
      parse: (raw) => {
        if (raw !== '' && !/^fcl_[A-Za-z0-9_-]{32}$/.test(raw)) throw new Error('expected a licence key fcl_... (36 characters)');
        return raw;
      },
    },
    public_key_file: { default: '', parse: text({ allowEmpty: true }) },
    development: { default: false, parse: flag },
    offline_grace_hours: { default: 0, parse: decimal(0, 24 * 365) },
    check_timeout_ms: { default: 10_000, parse: integer(100, 600_000) },
    machine_id_file: { default: '/etc/machine-id', parse: text({ allowEmpty: false }) },
  },
  // [log], [metrics]: docs/operations.md.
  log: {
    level: { default: 'info', parse: oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent') },
  },
  metrics: {
    access: { default: 'loopback', parse: oneOf('loopback', 'key', 'off') },
  },
  // [index]: the galleries' snapshots and the store's change log (docs/index-snapshot.md).
  index: {
    snapshot: { default: true, parse: flag },
    snapshot_interval_s: { default: 300, parse: integer(1, 86_400) },
    snapshot_min_changes: { default: 1000, parse: integer(1, 1_000_000_000) },
    // Within the installed unit's stop timeout (drain + 35 s: src/install/service-install.ts) after the drain.
    snapshot_stop_timeout_s: { default: 20, parse: integer(0, 3600) },
    change_log_keep: { default: 1_000_000, parse: integer(1000, 1_000_000_000) },
  },
};

/** Empty, or a comma-separated list of IPv4/IPv6 addresses or CIDR ranges (never "everyone"). */
function proxyList(raw: string): string {
  for (const entry of raw.split(',').map((e) => e.trim()).filter(Boolean)) {
    const [address, bits, extra] = entry.split('/');
    const isV4 = /^(\d{1,3})(\.\d{1,3}){3}$/.test(address);
    const isV6 = /^[0-9a-fA-F:]+$/.test(address) && address.includes(':');
    const maxBits = isV4 ? 32 : 128;
    if ((!isV4 && !isV6) || extra !== undefined || (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits))) {
      throw new Error(`expected IP addresses or CIDR ranges, comma separated, got "${entry}"`);
    }
  }
  return raw;
}

/** Empty, or scheme://host[:port] with an optional path prefix and no trailing slash. */
function httpUrl(raw: string): string {
  if (raw !== '' && !/^https?:\/\/[^/?#\s]+(\/[^?#\s]*[^/?#\s])?$/.test(raw)) {
    throw new Error(`expected empty or http(s)://host[:port][/path] without a trailing slash, got "${raw}"`);
  }
  return raw;
}
