// The service's Prometheus metrics (GET /metrics, src/http/plugins/ops-routes.ts), on a registry of its own
// per app: tests build many apps in one process, and prom-client's global registry would mix them.
// Labels hold bounded, non-secret values only: route patterns (never the raw URL, which carries person ids),
// status codes, stage and outcome names, and account ids (not secret). docs/operations.md lists every family.
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Config } from '../config/types';
import type { CameraEvent, CameraStatus } from '../device/native-camera';
import type { LicenceStatus } from '../licensing/device/device-licence';
import type { Galleries } from '../matching/galleries';
import type { StageTimings } from '../native';
import { DEFAULT_ACCOUNT } from '../services/auth';
import { requestsPerDayOf, utcDay } from '../services/quota';
import type { AsyncStore } from '../storage/interfaces';

export const METRICS_PREFIX = 'face_check_';

/** What the metrics read of the device licence (src/licensing/device/device-licence.ts, an EventEmitter of 'check'). */
export interface LicenceMetricsSource {
  status(): Pick<LicenceStatus, 'state' | 'lastCheck'>;
  /** Answered requests the cloud has not acknowledged yet (pending and in the report in flight). */
  unreportedRequests?(): number;
  on?(event: 'check', listener: (outcome: { kind: string }) => void): unknown;
  off?(event: 'check', listener: (outcome: { kind: string }) => void): unknown;
}

type CameraCounters = Pick<CameraStatus, 'connected' | 'framesCaptured' | 'framesAnalysed' | 'framesDropped' |
  'reportsDropped' | 'captureFps' | 'analyseFps'>;

/** What the metrics read of the device camera (src/device/camera.ts DeviceCamera). */
export interface CameraMetricsSource {
  status(): CameraCounters;
  subscribe?(listener: (event: CameraEvent) => void): () => void;
}

/** The camera's counters when the live-face source is a capture pipeline (tests hand in simpler sources). */
export function cameraMetricsSourceOf(source: object | undefined): CameraMetricsSource | undefined {
  return source && typeof (source as Partial<CameraMetricsSource>).status === 'function' ? source as CameraMetricsSource : undefined;
}

/** Where a PostgreSQL node's change follower stands (src/matching/gallery-follower.ts status()). */
export interface FollowerMetricsSource {
  status(): { position: number; lastSeen: number; lagSeconds: number; connected: boolean; stats: { reconnects: number; resyncs: number; offered: number } } | undefined;
}

/** The follower of a PostgreSQL node's galleries, when the app was given one (an LMDB service has none). */
export function followerMetricsSourceOf(feed: object | undefined): FollowerMetricsSource | undefined {
  return feed && typeof (feed as Partial<FollowerMetricsSource>).status === 'function' ? feed as FollowerMetricsSource : undefined;
}

/** A PostgreSQL node's meter cache (src/storage/postgres/meter-caches.ts), read at each scrape. */
export interface MeterCacheMetricsSource {
  readonly personsCached: number;
  readonly fillStats: { completed: number; stopped: number };
}

/** A PostgreSQL node's gallery cache (src/storage/postgres/gallery-cache.ts), when it keeps one. */
export interface GalleryCacheMetricsSource {
  /** Rows a search found damaged since the start (left out of it, then written again from the table). */
  rowFaults(): number;
}

/** The meter cache of a PostgreSQL store (an LMDB store has none). */
export function meterCacheSourceOf(store: object): MeterCacheMetricsSource | undefined {
  const caches = (store as { meterCaches?: Partial<MeterCacheMetricsSource> }).meterCaches;
  return caches && typeof caches.personsCached === 'number' && caches.fillStats ? caches as MeterCacheMetricsSource : undefined;
}

export interface MetricsSources {
  config: Config;
  store: AsyncStore;
  galleries: Galleries;
  licence?: LicenceMetricsSource;
  camera?: CameraMetricsSource;
  follower?: FollowerMetricsSource;
  galleryCache?: GalleryCacheMetricsSource;
  now: () => Date;
}

/** The delay monitor's sampling interval; it counts as delay, so it is taken off (as overload.ts does). */
const LOOP_RESOLUTION_MS = 10;
const STAGES = ['detect', 'landmarks', 'eyes', 'liveness', 'quality', 'embed', 'total'] as const;
const LICENCE_STATES: readonly LicenceStatus['state'][] = ['starting', 'licensed', 'refused', 'lapsed', 'closed'];
/** The route label of requests that matched no route (404, 405): the raw URL would be unbounded and personal. */
export const UNMATCHED_ROUTE = 'unmatched';

export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status_code'>;
  private readonly requestSeconds: Histogram<'method' | 'route'>;
  private readonly stageSeconds: Histogram<'stage'>;
  private readonly stageRuns: Counter<'stage'>;
  private readonly loopDelay: IntervalHistogram = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  private readonly cleanups: (() => void)[] = [];

  constructor(private readonly sources: MetricsSources) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: `${METRICS_PREFIX}http_requests_total`, help: 'HTTP requests answered, by route pattern and status code',
      labelNames: ['method', 'route', 'status_code'], registers,
    });
    this.requestSeconds = new Histogram({
      name: `${METRICS_PREFIX}http_request_duration_seconds`, help: 'Time from a request\'s arrival to its answer',
      labelNames: ['method', 'route'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers,
    });
    this.stageSeconds = new Histogram({
      name: `${METRICS_PREFIX}engine_stage_seconds`,
      help: 'Face engine time per analysis and stage (stages that ran; "total" is the whole analysis)',
      labelNames: ['stage'], buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers,
    });
    this.stageRuns = new Counter({
      name: `${METRICS_PREFIX}engine_stage_runs_total`,
      help: 'Face engine stage runs (detect: one per analysis; the others one per face they ran for)',
      labelNames: ['stage'], registers,
    });
    this.storeGauges(registers);
    this.eventLoopGauges(registers);
    if (sources.licence) this.licenceMetrics(sources.licence, registers);
    if (sources.camera) this.cameraMetrics(sources.camera, registers);
    if (sources.follower) this.followerMetrics(sources.follower, registers);
    const meterCache = sources.follower && meterCacheSourceOf(sources.store);
    if (meterCache) this.meterCacheMetrics(meterCache, registers);
    if (sources.galleryCache) this.galleryCacheMetrics(sources.galleryCache, registers);
  }

  /** One answered request; `route` is the matched route's pattern (undefined: none matched). */
  observeRequest(method: string, route: string | undefined, statusCode: number, seconds: number): void {
    const r = route ?? UNMATCHED_ROUTE;
    this.requests.inc({ method, route: r, status_code: String(statusCode) });
    this.requestSeconds.observe({ method, route: r }, seconds);
  }

  /** One engine analysis's stage times (milliseconds, as the engine reports them). */
  observeEngine(timings: StageTimings): void {
    for (const stage of STAGES) {
      // Each operation runs its own stages (services/operation-stages.ts): only those that ran are observed.
      const runs = stage === 'total' ? 1 : timings.runs ? timings.runs[stage] : timings[stage] > 0 ? 1 : 0;
      if (runs === 0) continue;
      this.stageSeconds.observe({ stage }, timings[stage] / 1000);
      if (stage !== 'total') this.stageRuns.inc({ stage }, runs);
    }
  }

  /** The text exposition format and its content type. */
  async exposition(): Promise<{ text: string; contentType: string }> {
    return { text: await this.registry.metrics(), contentType: this.registry.contentType };
  }

  close(): void {
    this.loopDelay.disable();
    for (const cleanup of this.cleanups.splice(0)) cleanup();
  }

  /** Accounts that can hold persons or use quota: those of API keys (the bootstrap key's too) and operators'. */
  private async accounts(): Promise<string[]> {
    const { store, config } = this.sources;
    const ids = new Set((await store.apiKeys.list()).map((k) => k.accountId));
    for (const a of await store.accounts.list()) ids.add(a.accountId);
    if (config.auth.bootstrap_key) ids.add(DEFAULT_ACCOUNT);
    return [...ids].sort();
  }

  private storeGauges(registers: Registry[]): void {
    const { galleries, store, config, now } = this.sources;
    const accounts = () => this.accounts();
    new Gauge({
      name: `${METRICS_PREFIX}index_persons`, help: 'Persons in the account\'s search index (templates of the running model)',
      labelNames: ['account'], registers,
      async collect() {
        const sizes = galleries.sizes();
        const all = await accounts();
        this.reset();
        for (const account of new Set([...all, ...sizes.keys()])) this.set({ account }, sizes.get(account) ?? 0);
      },
    });
    new Gauge({
      name: `${METRICS_PREFIX}quota_used_today`, help: 'Metered requests the account made this UTC day (counted only under a limit)',
      labelNames: ['account'], registers,
      async collect() {
        const day = utcDay(now());
        const used = await Promise.all((await accounts()).map(async (account) => [account, await store.quota.used(account, day)] as const));
        this.reset();
        for (const [account, n] of used) this.set({ account }, n);
      },
    });
    new Gauge({
      name: `${METRICS_PREFIX}quota_limit_per_day`, help: 'Metered requests the account may make per UTC day (0 = unlimited)',
      labelNames: ['account'], registers,
      async collect() {
        const limits = await Promise.all((await accounts()).map(async (account) =>
          [account, requestsPerDayOf(config, await store.accounts.get(account))] as const));
        this.reset();
        for (const [account, n] of limits) this.set({ account }, n);
      },
    });
  }

  private eventLoopGauges(registers: Registry[]): void {
    const delay = this.loopDelay;
    delay.enable();
    // Each scrape reads the delays since the previous one, then starts afresh (as prom-client's own lag metric).
    let window = { mean: 0, p99: 0, max: 0 };
    const seconds = (ns: number) => Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS) / 1000;
    const sample = () => {
      if (delay.count > 0) window = { mean: seconds(delay.mean), p99: seconds(delay.percentile(99)), max: seconds(delay.max) };
      else window = { mean: 0, p99: 0, max: 0 };
      delay.reset();
    };
    new Gauge({
      name: `${METRICS_PREFIX}event_loop_lag_max_seconds`, help: 'Longest event-loop delay since the previous scrape', registers,
      // Read first of the three (registration order), so the three report one window.
      collect() { sample(); this.set(window.max); },
    });
    new Gauge({
      name: `${METRICS_PREFIX}event_loop_lag_p99_seconds`, help: '99th percentile of the event-loop delay since the previous scrape', registers,
      collect() { this.set(window.p99); },
    });
    new Gauge({
      name: `${METRICS_PREFIX}event_loop_lag_mean_seconds`, help: 'Mean event-loop delay since the previous scrape', registers,
      collect() { this.set(window.mean); },
    });
  }

  private licenceMetrics(licence: LicenceMetricsSource, registers: Registry[]): void {
    let lastSuccess: number | undefined;
    const noteStatus = () => {
      const last = licence.status().lastCheck;
      if (last?.outcome === 'ok') lastSuccess = Math.max(lastSuccess ?? 0, Date.parse(last.at) / 1000);
      return last;
    };
    noteStatus(); // the start-up check ran before the app was built
    new Gauge({
      name: `${METRICS_PREFIX}licence_state`, help: 'The device licence\'s state: 1 for the current one',
      labelNames: ['state'], registers,
      collect() {
        const state = licence.status().state;
        for (const s of LICENCE_STATES) this.set({ state: s }, s === state ? 1 : 0);
      },
    });
    new Gauge({
      name: `${METRICS_PREFIX}licence_last_check_timestamp_seconds`, help: 'When the licence was last checked with the cloud, any outcome (Unix time)',
      registers,
      collect() {
        const last = noteStatus();
        if (last) this.set(Date.parse(last.at) / 1000);
      },
    });
    new Gauge({
      name: `${METRICS_PREFIX}licence_last_success_timestamp_seconds`, help: 'When a licence check last succeeded (Unix time)',
      registers,
      collect() {
        noteStatus();
        if (lastSuccess !== undefined) this.set(lastSuccess);
      },
    });
    if (licence.unreportedRequests) {
      const unreported = () => licence.unreportedRequests!();
      new Gauge({
        name: `${METRICS_PREFIX}licence_usage_unreported_requests`, help: 'Answered requests kept on the device until the cloud acknowledges them',
        registers,
        collect() { this.set(unreported()); },
      });
    }
    const checks = new Counter({
      name: `${METRICS_PREFIX}licence_checks_total`, help: 'Licence checks with the cloud since start-up, by outcome',
      labelNames: ['outcome'], registers,
    });
    if (licence.on && licence.off) {
      const onCheck = (outcome: { kind: string }) => {
        checks.inc({ outcome: outcome.kind });
        if (outcome.kind === 'ok') lastSuccess = this.sources.now().getTime() / 1000;
      };
      licence.on('check', onCheck);
      this.cleanups.push(() => licence.off!('check', onCheck));
    }
  }

  private followerMetrics(follower: FollowerMetricsSource, registers: Registry[]): void {
    const gauge = (name: string, help: string, read: (s: NonNullable<ReturnType<FollowerMetricsSource['status']>>) => number) => new Gauge({
      name: `${METRICS_PREFIX}${name}`, help, registers,
      collect() {
        const s = follower.status();
        if (s) this.set(read(s));
      },
    });
    gauge('change_follower_position', 'The last person change this node\'s galleries hold (change log seq)', (s) => s.position);
    gauge('change_log_last_seq', 'The highest person change seq this node has seen committed', (s) => s.lastSeen);
    gauge('change_follower_behind', 'Person changes seen committed and not yet in this node\'s galleries (seqs; gaps count)', (s) => Math.max(0, s.lastSeen - s.position));
    gauge('change_follower_lag_seconds', 'Seconds this node\'s galleries have been behind the change log without catching up (0: caught up)', (s) => s.lagSeconds);
    gauge('change_follower_connected', '1 while the change follower\'s connection is up', (s) => (s.connected ? 1 : 0));
    const cumulative = (name: string, help: string, read: (s: { reconnects: number; resyncs: number; offered: number }) => number) => new Counter({
      name: `${METRICS_PREFIX}${name}`, help, registers,
      collect() {
        const s = follower.status();
        this.reset();
        this.inc(s ? read(s.stats) : 0);
      },
    });
    cumulative('change_follower_reconnects_total', 'Times the change follower reconnected to the database', (s) => s.reconnects);
    cumulative('change_follower_resyncs_total', 'Galleries rebuilt because the change log was pruned past this node', (s) => s.resyncs);
    cumulative('change_follower_offered_total', 'Person changes this node wrote and its galleries took from the writer, without reading the log', (s) => s.offered);
  }

  private galleryCacheMetrics(cache: GalleryCacheMetricsSource, registers: Registry[]): void {
    new Counter({
      name: `${METRICS_PREFIX}gallery_cache_row_faults_total`, registers,
      help: 'Rows of this node\'s gallery cache a search found damaged: left out of that search, then written again from the persons table',
      collect() {
        this.reset();
        this.inc(cache.rowFaults());
      },
    });
  }

  private meterCacheMetrics(caches: MeterCacheMetricsSource, registers: Registry[]): void {
    new Gauge({
      name: `${METRICS_PREFIX}meter_cache_persons`, registers,
      help: 'Persons whose metadata this node holds to meter unlimited requests without a statement (filled once its follower listens)',
      collect() { this.set(caches.personsCached); },
    });
    new Counter({
      name: `${METRICS_PREFIX}meter_cache_fills_total`, registers, labelNames: ['outcome'],
      help: 'Fills of the meter cache from the database: completed, or stopped (connection lost or made again, or a failed read)',
      collect() {
        this.reset();
        this.inc({ outcome: 'completed' }, caches.fillStats.completed);
        this.inc({ outcome: 'stopped' }, caches.fillStats.stopped);
      },
    });
  }

  private cameraMetrics(camera: CameraMetricsSource, registers: Registry[]): void {
    const cumulative = (name: string, help: string, read: (s: CameraCounters) => number) => new Counter({
      name: `${METRICS_PREFIX}${name}`, help, registers,
      // The pipeline counts natively; a counter is reset and set to its total at each scrape.
      collect() { this.reset(); this.inc(read(camera.status())); },
    });
    cumulative('camera_frames_captured_total', 'Frames the camera delivered', (s) => s.framesCaptured);
    cumulative('camera_frames_analysed_total', 'Frames the liveness pipeline analysed', (s) => s.framesAnalysed);
    cumulative('camera_frames_dropped_total', 'Frames replaced by newer ones while every worker was busy', (s) => s.framesDropped);
    cumulative('camera_reports_dropped_total', 'Frame reports lost to a full event queue (not counted in liveness decisions)', (s) => s.reportsDropped);
    new Gauge({
      name: `${METRICS_PREFIX}camera_connected`, help: '1 while the camera is connected', registers,
      collect() { this.set(camera.status().connected ? 1 : 0); },
    });
    new Gauge({
      name: `${METRICS_PREFIX}camera_frames_per_second`, help: 'Frames per second captured and analysed', labelNames: ['stage'], registers,
      collect() {
        const s = camera.status();
        this.set({ stage: 'capture' }, s.captureFps);
        this.set({ stage: 'analyse' }, s.analyseFps);
      },
    });
    const decisions = new Counter({
      name: `${METRICS_PREFIX}liveness_decisions_total`,
      help: 'Liveness decisions on analysed frames: live, not_live (a face that failed a check), no_face',
      labelNames: ['outcome'], registers,
    });
    for (const outcome of ['live', 'not_live', 'no_face']) decisions.inc({ outcome }, 0);
    if (camera.subscribe) {
      this.cleanups.push(camera.subscribe((event) => {
        if (event.type !== 'frame') return;
        decisions.inc({ outcome: event.decision.live ? 'live' : event.face ? 'not_live' : 'no_face' });
      }));
    }
  }
}
