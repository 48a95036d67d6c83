// The fastify application: plugins (request id, JSON bodies, auth, errors, OpenAPI), the person routes and,
// in cloud mode, the operators' half (operators-half.ts).
// buildApp does not listen and does not own the engine, the store or the galleries: the caller opens and closes them.
import crypto from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import './fastify-types';
import type { Config } from '../config/types';
import type { FaceEngine } from '../engine/types';
import type { ErrorCatalog } from '../errors';
import { PixelBudget } from '../image/pixel-budget';
import type { Galleries } from '../matching/galleries';
import { SimilarityScale } from '../matching/similarity-scale';
import { Authenticator, type LicenceKeySource } from '../services/auth';
import { RequestSigning } from '../services/request-signing';
import { createServices, type LiveFaceSource } from '../services';
import type { PackageFile } from '../install/package-file';
import { readiness } from '../ops/health';
import { cameraMetricsSourceOf, followerMetricsSourceOf, ServiceMetrics, type GalleryCacheMetricsSource, type LicenceMetricsSource } from '../ops/metrics';
import { timedEngine } from '../ops/timed-engine';
import type { AsyncStore } from '../storage/interfaces';
import type { GalleryFeed } from '../services/context';
import { answerUnroutable, clientErrorHandler } from './client-errors';
import authPlugin from './plugins/auth';
import errorHandler, { sendApiError, toApiError } from './plugins/error-handler';
import hostHeader from './plugins/host-header';
import licenceGate, { type LicenceGateSource } from './plugins/licence-gate';
import jsonBody from './plugins/json-body';
import openapi from './plugins/openapi';
import opsRoutes from './plugins/ops-routes';
import overload from './plugins/overload';
import requestSigning from './plugins/request-signing';
import requestId from './plugins/request-id';
import compareFace from './routes/compare-face';
import type { LicenceKeyState } from '../licensing/cloud/licence-server';
import { registerOperatorRoutes, registerOperatorSessions, type OperatorsDeps } from './operators-half';
import liveFace from './routes/live-face';
import personFace from './routes/person-face';
import recognizeFace from './routes/recognize-face';
import verifyFace from './routes/verify-face';

export interface AppDeps {
  config: Config;
  engine: FaceEngine;
  store: AsyncStore;
  errors: ErrorCatalog;
  /** What keeps `galleries` in step with the store's commits. */
  galleryFeed: GalleryFeed;
  /** A PostgreSQL node's gallery cache, when it keeps one (its metrics). */
  galleryCache?: GalleryCacheMetricsSource;
  /** One gallery per account of engine.modelId, built (and kept in step) by the start. */
  galleries: Galleries;
  scale?: SimilarityScale;
  /** Device mode live-face source; absent = camera not connected (R_400). */
  camera?: LiveFaceSource;
  now?: () => Date;
  logger?: FastifyServerOptions['logger'];
  /** Device mode: the licence every person-API request is gated by; absent = ungated (development, cloud). */
  licence?: LicenceGateSource & LicenceMetricsSource & Partial<LicenceKeySource>;
  /** Cloud: the package devices install; default: this program packed once per version. */
  packageFile?: PackageFile;
  /** Cloud: a licence key's state for the package download; default: the licence server's. */
  licenceKeyState?: (key: string) => LicenceKeyState | Promise<LicenceKeyState>;
}

/** Longest path parameter the router matches (a request line cannot exceed node's 16 KiB header limit), so a
 *  long person_id reaches the schema check (R_003) instead of failing in the router. */
const MAX_PARAM_LENGTH = 16 * 1024;

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, errors } = deps;
  const { store, galleries } = deps;
  const metrics = new ServiceMetrics({
    config, store, galleries, licence: deps.licence, camera: cameraMetricsSourceOf(deps.camera), follower: followerMetricsSourceOf(deps.galleryFeed),
    galleryCache: deps.galleryCache,
    now: deps.now ?? (() => new Date()),
  });
  const services = createServices({
    config,
    engine: timedEngine(deps.engine, (timings) => metrics.observeEngine(timings)),
    store,
    galleries,
    galleryFeed: deps.galleryFeed,
    scale: deps.scale ?? new SimilarityScale(),
    errors,
    now: deps.now ?? (() => new Date()),
    pixels: new PixelBudget(config.image.max_pixels_in_flight),
    limits: deps.licence && (() => deps.licence!.limits()),
  }, deps.camera);

  let logger: FastifyBaseLogger | undefined;
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: config.server.body_limit_bytes,
    genReqId: () => crypto.randomUUID(),
    requestIdHeader: false,
    exposeHeadRoutes: false,
    // Types are checked, never coerced ("80" is not a number); unknown fields are errors, not dropped.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // request.ip is the client's own address only behind the proxies named here ([server] trust_proxy).
    trustProxy: config.server.trust_proxy ? config.server.trust_proxy.split(',').map((e) => e.trim()).filter(Boolean) : false,
    // Timeouts ([server] *_timeout_ms); a request not received in time gets 408 (client-errors.ts).
    requestTimeout: config.server.request_timeout_ms,
    keepAliveTimeout: config.server.keep_alive_timeout_ms,
    connectionTimeout: config.server.idle_timeout_ms,
    http: {
      headersTimeout: Math.min(config.server.headers_timeout_ms, config.server.request_timeout_ms),
      // Node checks the two timeouts above only this often (default 30 s).
      connectionsCheckingInterval: 1000,
      requireHostHeader: false, // checked by plugins/host-header.ts, with the API's error body
    },
    // Parser errors (400/431) and timeouts (408) answered in the API's shape; the drain's 503 is overload.ts's.
    clientErrorHandler: clientErrorHandler(errors, () => logger),
    return503OnClosing: false,
    // Errors raised before the hooks run (e.g. a malformed %-escape in person_id).
    frameworkErrors: (err, request, reply) => {
      reply.header('Request-Id', request.id);
      sendApiError(request, reply, toApiError(errors, err), err);
    },
  });
  logger = app.log;
  answerUnroutable(app.server, errors, () => logger);
  app.decorate('services', services);

  await app.register(requestId);
  await app.register(errorHandler, { errors });
  await app.register(hostHeader, { errors });
  // Order matters for the preValidation hooks: the signature is checked before the body is judged.
  await app.register(authPlugin, {
    authenticator: new Authenticator(store.apiKeys, errors, config.auth.bootstrap_key, deps.now, store.keyUsage,
      deps.licence?.apiKey ? (deps.licence as LicenceKeySource) : undefined),
  });
  // Cloud: operators' accounts. Their routes authenticate with a session (Authorization: Bearer), not an Api-Key.
  const operators: OperatorsDeps = {
    config, store, errors, now: deps.now ?? (() => new Date()),
    packageFile: deps.packageFile, licenceKeyState: deps.licenceKeyState,
  };
  if (config.server.mode === 'cloud') await registerOperatorSessions(app, operators);
  // After authentication (401 before 403), before load shedding: a licence refusal is told even under load.
  if (deps.licence) await app.register(licenceGate, { licence: deps.licence, errors });
  // Probes and metrics (src/ops): before the load shedding, which a live probe skips.
  await app.register(opsRoutes, {
    metrics, access: config.metrics.access, mode: config.server.mode, errors,
    readiness: () => readiness({
      mode: config.server.mode, engine: deps.engine, probeStore: async () => { await store.apiKeys.isEmpty(); },
      licence: deps.licence, camera: deps.camera, cameraExpected: config.camera.source !== 'none',
    }),
  });
  // After authentication: an unauthenticated request is 401 whatever the load.
  await app.register(overload, {
    errors,
    maxEventLoopDelayMs: config.server.max_event_loop_delay_ms,
    maxEngineQueue: config.server.max_engine_queue,
    enginePending: () => deps.engine.pending ?? 0,
  });
  const signing = new RequestSigning(errors, () => store.serviceKeys.responseSigning(),
    config.auth.signature_max_age_seconds, deps.now ?? (() => new Date()), store.replayCache);
  // With signing keys in the store, load (or make) the service key now, not on the first signed response.
  if ((await store.apiKeys.list()).some((k) => k.signingPublicKey)) await signing.ready();
  await app.register(requestSigning, { signing, publicBaseUrl: config.auth.public_base_url });
  await app.register(jsonBody, { errors });
  // The mode reaches the routes only as this option: it picks their schemas and answers at registration.
  const { mode } = config.server;
  await app.register(openapi, { mode });

  await app.register(liveFace, { mode, errors });
  await app.register(personFace, { mode });
  await app.register(recognizeFace, { mode });
  await app.register(verifyFace, { mode });
  await app.register(compareFace, { mode });
  if (mode === 'cloud') await registerOperatorRoutes(app, operators);
  await app.ready();
  return app;
}
