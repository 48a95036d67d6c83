// The typed configuration. Property names are the ini keys verbatim, so the ini reference in README.md,
// the ini files and the code all use one vocabulary.

export type ServiceMode = 'device' | 'cloud';
/** A camera source of the addon's registry (src/device/camera-catalog.ts), or 'none'. */
export type CameraSource = string;

export interface ServerConfig {
  mode: ServiceMode;
  host: string;
  port: number;
  /** Largest accepted request body; a larger one is answered 413 R_002 before it is parsed. */
  body_limit_bytes: number;
  /** A request (headers and body) not received within this is answered 408 and its connection closed. */
  request_timeout_ms: number;
  /** The headers alone must arrive within this (at most request_timeout_ms). */
  headers_timeout_ms: number;
  /** An idle keep-alive connection is closed after this. */
  keep_alive_timeout_ms: number;
  /** A connection with no traffic either way for this long is closed; 0 = never. */
  idle_timeout_ms: number;
  /** On SIGTERM/SIGINT, in-flight requests get this long to finish before their connections are cut. */
  drain_timeout_ms: number;
  /** Longest event-loop delay of the last half second above which every request is answered 503 (Retry-After);
   *  0 = no bound. */
  max_event_loop_delay_ms: number;
  /** Face-analysis requests in flight above which further ones are answered 503 (Retry-After); 0 = no bound. */
  max_engine_queue: number;
  /**
   * Reverse proxies whose X-Forwarded-For is believed (addresses or CIDR ranges, comma separated); empty = none.
   * The client address they pass on is what sign-in throttling and the licence server's last check record.
   */
  trust_proxy: string;
}

export interface StorageConfig {
  /** LMDB directory, absolute (relative ini values are resolved against the ini file's folder). */
  path: string;
  /**
   * The 32-byte key-encryption key that unwraps the store's data key, absolute; empty = `<path>/face-check.key`
   * (made 0600 for a new store). README "Data at rest", docs/security.md.
   */
  key_file: string;
  /** Where the data lives: `lmdb` (the folder `path`, one process) or `postgres` (cloud nodes sharing one database). */
  backend: 'lmdb' | 'postgres';
  /** postgres://user[:password]@host:port/database (backend = postgres). */
  postgres_url: string;
  /** Connections this node holds at most. */
  postgres_pool_size: number;
  /** Server-side statement timeout (a lock wait counts); a request past it is answered 503. */
  postgres_statement_timeout_ms: number;
  /** Longest wait for a connection (a free pool slot or a new connection); past it the request is answered 503. */
  postgres_connect_timeout_ms: number;
  /**
   * backend = postgres: keep the persons' sealed templates in `<path>/gallery-cache`, the index's exact re-rank
   * reading them there (int8 codes only in memory, kept across restarts); false: a float32 copy in memory.
   */
  gallery_cache: boolean;
}

export interface AuthConfig {
  /** An API key accepted in addition to stored keys (account "default", role full). Empty: none. */
  bootstrap_key: string;
  /** Base URL clients sign (spec 5), e.g. https://faces.example.com; empty = protocol://Host of the request. */
  public_base_url: string;
  /** A signed request's Timestamp may be this many seconds from the server's clock. */
  signature_max_age_seconds: number;
}

export interface MatchingConfig {
  /** Similarity percent (0..100) a 1:N identification needs. */
  identify_threshold: number;
  /** Similarity percent a 1:1 verification needs. */
  verify_threshold: number;
  /** Default similarity percent for compare when the request has no similarityThreshold. */
  compare_threshold: number;
  /** Similarity percent at which an enrolment photo counts as an already enrolled face (F_012). */
  duplicate_threshold: number;
}

export interface ImageConfig {
  /** Largest decoded (binary) image, in bytes. */
  max_bytes: number;
  /** Largest image in pixels (width x height), enforced by the decoder before it allocates. */
  max_pixels: number;
  /** Decoded pixels of all requests in flight together; an image beyond it is answered 503 at once. */
  max_pixels_in_flight: number;
}

/** Bounds of the enrolment checks (defaults measured with npm run bench:quality). Units as in src/engine/types.ts. */
export interface QualityConfig {
  min_face_size: number;
  max_yaw: number;
  max_pitch: number;
  max_roll: number;
  min_brightness: number;
  max_brightness: number;
  min_sharpness: number;
  min_eye_openness: number;
  max_mouth_openness: number;
  max_sunglasses: number;
  /** Faces smaller than this fraction of the largest face's size are background faces, not counted. */
  background_face_ratio: number;
  /** Photos without a detected face: bounds of the image centre's mean luma (F_006) and Laplacian variance
   *  (F_007), measured by src/services/no-face-diagnosis.ts; docs/quality.md. */
  min_image_brightness: number;
  max_image_brightness: number;
  min_image_sharpness: number;
}

/** [camera] (device mode): the depth camera source and its options; docs/device.md. */
export interface CameraConfig {
  source: CameraSource;
  /**
   * The [camera.<source>] sections as given, by source name (ini text, or typed values set in code);
   * checked against the addon's registry at start (src/device/camera-settings.ts).
   */
  sources: Record<string, Record<string, string | number | boolean>>;
  /** The ini's folder: relative paths in [camera.<source>] sections resolve against it. */
  base_dir: string;
  /** Colour camera intrinsics in pixels; 0 = the source's own. */
  fx: number;
  fy: number;
  cx: number;
  cy: number;
  /** Analysis threads of the capture pipeline. */
  workers: number;
  reconnect_ms: number;
  /** Frames a second analysed while no face has been seen for a second (realtime sources); 0 = every frame. */
  idle_detect_fps: number;
}

/** [liveness] (device mode): thresholds of the liveness decision; docs/device.md explains each. */
export interface LivenessConfig {
  min_face_px: number;
  max_distance_mm: number;
  min_depth_coverage: number;
  min_face_width_mm: number;
  max_face_width_mm: number;
  min_plane_rms_mm: number;
  min_nose_relief_mm: number;
  max_nose_relief_mm: number;
  max_eye_recess_mm: number;
  max_depth_step_share: number;
  max_nose_offset: number;
  max_yaw: number;
  max_pitch: number;
  min_infrared_pattern: number;
  window_frames: number;
  min_pass_frames: number;
  max_gap_ms: number;
  min_micro_motion_mm: number;
  require_blink: boolean;
  blink_closed: number;
  blink_open: number;
  blink_window_ms: number;
  colour_min: number;
  allow_colour_only: boolean;
  colour_only_threshold: number;
  colour_every: number;
  /** A live face is served for this long after it passed (spec 8: 1 second). */
  recency_ms: number;
  /** How long a faceKey stays valid. */
  face_key_ttl_s: number;
}

export interface QuotaConfig {
  /** Metered requests per account per UTC day; 0 = unlimited. */
  requests_per_day: number;
}

/** [plans] (cloud): what the free test plan and the paid plan allow. 0 = unlimited where a count. */
export interface PlansConfig {
  /** Metered requests per day of a free-plan account (spec 5: "A free test plan provides a key"). */
  free_requests_per_day: number;
  /** Licences (not revoked) a free-plan account may hold; 0 = unlimited. */
  free_max_licences: number;
  /** Adding a licence on the free plan needs an activation code. */
  free_activation_code: boolean;
  paid_requests_per_day: number;
  paid_max_licences: number;
  paid_activation_code: boolean;
}

/** [accounts] (cloud): operators' accounts and their sign-in. */
export interface AccountsConfig {
  /**
   * Who may open an account: open: anyone (the free test plan); activation-code: whoever has a registration
   * code an administrator issued; invitation: only the e-mail address an administrator invited (with its
   * code); closed: accounts only by the CLI.
   */
  registration: 'open' | 'activation-code' | 'invitation' | 'closed';
  /** Registrations (made or refused as taken) per client address within the registration window. */
  registrations_per_address: number;
  /** Registrations per client network (IPv4 /24, IPv6 /64) within the registration window. */
  registrations_per_network: number;
  registration_window_hours: number;
  min_password_length: number;
  /** A session unused this long ends. */
  session_idle_minutes: number;
  /** A session ends this long after sign-in, used or not. */
  session_max_hours: number;
  /** Failed sign-ins per account and client address (the pair) within the lockout window before that pair is refused. */
  sign_in_max_failures: number;
  /** Failed sign-ins per client address, whatever the accounts, within the lockout window. */
  sign_in_address_max_failures: number;
  /** Failed sign-ins per account from all addresses within the lockout window before the account refuses addresses
   *  it was never signed in from (those it was are not refused). */
  sign_in_account_max_failures: number;
  sign_in_lockout_minutes: number;
  /** Client addresses remembered per account (its latest successful sign-ins). */
  known_addresses_per_account: number;
}

/** [licensing] (cloud): the licence server devices check in with. */
export interface LicensingConfig {
  /** The cloud's address as devices reach it (installation commands, the device ini); empty = [auth]
   *  public_base_url, else http://host:port of [server]. */
  public_url: string;
  /** A device checks its licence again this often. */
  check_interval_seconds: number;
  /** A device serves on a document at most this long after it was issued when re-checks fail. */
  document_valid_seconds: number;
  /** The package devices install (a `npm pack` tarball, absolute); empty = this program packed once per version
   *  into <storage path>/packages. */
  package_file: string;
}

/** [licence] (device): the licence this device runs under; written by the installation command. */
export interface LicenceConfig {
  /** The cloud's licence server, e.g. https://cloud.example.com. */
  server_url: string;
  /** The licence key (fcl_...). */
  key: string;
  /** The cloud's public key (PEM, absolute) that licence documents must verify against. */
  public_key_file: string;
  /** No licence: every operation allowed, for development only (the embedded default of `npm start`). */
  development: boolean;
  /** At start-up with the cloud unreachable, the last verified document is used if issued less than this
   *  long ago; 0 = never (the spec: internet at start-up). */
  offline_grace_hours: number;
  /** One licence check's time limit. */
  check_timeout_ms: number;
  /** The machine id the device fingerprint is derived from. */
  machine_id_file: string;
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** [log]: the service log, JSON lines on stdout (src/ops/log-options.ts). */
export interface LogConfig {
  level: LogLevel;
}

/** [metrics]: who may read GET /metrics (src/http/plugins/ops-routes.ts). */
export interface MetricsConfig {
  /** loopback: requests from 127.0.0.1/::1 only; key: an API key of role full; off: 404 for everyone. */
  access: 'loopback' | 'key' | 'off';
}

/** [index]: the galleries' snapshots and the store's change log (docs/index-snapshot.md). */
export interface IndexConfig {
  /** Start the galleries from their snapshots and write them; false: rebuild every start, write none. */
  snapshot: boolean;
  /** How often accounts with enough changes get a new snapshot. */
  snapshot_interval_s: number;
  /** Changes of an account since its snapshot that make it due at the next interval. */
  snapshot_min_changes: number;
  /** At an orderly stop, the time the snapshots of changed accounts may take; 0 = write none. */
  snapshot_stop_timeout_s: number;
  /** Entries the store's change log keeps; a snapshot older than the oldest kept is rebuilt at start. */
  change_log_keep: number;
}

export interface Config {
  server: ServerConfig;
  storage: StorageConfig;
  auth: AuthConfig;
  matching: MatchingConfig;
  image: ImageConfig;
  quality: QualityConfig;
  camera: CameraConfig;
  liveness: LivenessConfig;
  quota: QuotaConfig;
  plans: PlansConfig;
  accounts: AccountsConfig;
  licensing: LicensingConfig;
  licence: LicenceConfig;
  log: LogConfig;
  metrics: MetricsConfig;
  index: IndexConfig;
}
