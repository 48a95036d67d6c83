// The fastify application: plugins (request id, JSON bodies, auth, errors, OpenAPI) and the person routes.
// buildApp does not listen and does not own the engine or the store: the caller opens and closes them.
import crypto from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import './fastify-types';
import type { Config } from '../config/types';
import type { FaceEngine } from '../engine/types';
import type { ErrorCatalog } from '../errors';
import { Galleries } from '../matching/galleries';
import { SimilarityScale } from '../matching/similarity-scale';
import { Authenticator } from '../services/auth';
import { RequestSigning } from '../services/request-signing';
import { createServices, type LiveFaceSource } from '../services';
import type { Store } from '../storage/store';
import authPlugin from './plugins/auth';
import errorHandler, { sendApiError, toApiError } from './plugins/error-handler';
import jsonBody from './plugins/json-body';
import openapi from './plugins/openapi';
import requestSigning from './plugins/request-signing';
import requestId from './plugins/request-id';
import compareFace from './routes/compare-face';
import liveFace from './routes/live-face';
import personFace from './routes/person-face';
import recognizeFace from './routes/recognize-face';
import verifyFace from './routes/verify-face';

export interface AppDeps {
  config: Config;
  engine: FaceEngine;
  store: Store;
  errors: ErrorCatalog;
  /** Default: one gallery per account, rebuilt from the store for engine.modelId. */
  galleries?: Galleries;
  scale?: SimilarityScale;
  /** Device mode live-face source (issue 6); absent = camera not connected (R_400). */
  camera?: LiveFaceSource;
  now?: () => Date;
  logger?: FastifyServerOptions['logger'];
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, errors } = deps;
  let galleries = deps.galleries;
  const ownGalleries = !galleries;
  if (!galleries) {
    galleries = new Galleries();
    await galleries.rebuild(deps.store.persons, deps.engine.modelId);
  }
  const services = createServices({
    config,
    engine: deps.engine,
    store: deps.store,
    galleries,
    scale: deps.scale ?? new SimilarityScale(),
    errors,
    now: deps.now ?? (() => new Date()),
  }, deps.camera);

  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: config.server.body_limit_bytes,
    genReqId: () => crypto.randomUUID(),
    requestIdHeader: false,
    exposeHeadRoutes: false,
    // Types are checked, never coerced ("80" is not a number); unknown fields are errors, not dropped.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    // Errors raised before the hooks run (e.g. a malformed %-escape in person_id).
    frameworkErrors: (err, request, reply) => {
      reply.header('Request-Id', request.id);
      sendApiError(request, reply, toApiError(errors, err), err);
    },
  });
  app.decorate('services', services);
  app.decorate('serviceConfig', config);

  await app.register(requestId);
  await app.register(errorHandler, { errors });
  // Order matters for the preValidation hooks: the signature is checked before the body is judged.
  await app.register(authPlugin, {
    authenticator: new Authenticator(deps.store.apiKeys, errors, config.auth.bootstrap_key),
  });
  const signing = new RequestSigning(errors, () => deps.store.serviceKeys.responseSigning(),
    config.auth.signature_max_age_seconds, deps.now ?? (() => new Date()));
  // With signing keys in the store, load (or make) the service key now, not on the first signed response.
  if (deps.store.apiKeys.list().some((k) => k.signingPublicKey)) await signing.ready();
  await app.register(requestSigning, { signing, publicBaseUrl: config.auth.public_base_url });
  await app.register(jsonBody, { errors });
  await app.register(openapi, { mode: config.server.mode });

  await app.register(liveFace, { mode: config.server.mode, errors });
  await app.register(personFace);
  await app.register(recognizeFace);
  await app.register(verifyFace);
  await app.register(compareFace, { mode: config.server.mode });
  // Galleries built here are released with the app; a caller's own (server.ts) are the caller's to close.
  if (ownGalleries) app.addHook('onClose', async () => galleries.close());
  await app.ready();
  return app;
}
