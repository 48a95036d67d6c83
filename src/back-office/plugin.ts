// The account back-office (cloud mode only): web pages under /back-office/ where operators register, sign
// in, manage their API keys and licences and read their usage. It is a view over the AccountService and
// LicenceService that the JSON account API calls: no rule is decided here.
//
// Everything below is encapsulated in this plugin's scope, so the JSON API keeps its own body parser, error
// body and headers: forms (urlencoded, 64 KiB), session cookies, CSRF tokens, HTML error pages and the
// security headers (helmet, with a Content-Security-Policy that allows no inline script) apply here only.
import helmet from '@fastify/helmet';
import type { FastifyError, FastifyPluginAsync } from 'fastify';
import type { Config } from '../config/types';
import type { AccountService } from '../accounts/accounts';
import { ActivationCodes } from '../licensing/cloud/activation-codes';
import type { DeviceKeyService } from '../licensing/cloud/licence-device-keys';
import type { LicenceService } from '../licensing/cloud/licences';
import { DatabaseUnavailableError } from '../storage/errors';
import type { AsyncStore } from '../storage/interfaces';
import type { BackOfficeContext } from './context';
import { CsrfTokens } from './csrf';
import { acceptFormBodies } from './form-body';
import { BASE } from './paths';
import { refusalOf } from './problems';
import { sendPage } from './respond';
import { OneTimeReveals } from './reveals';
import accountRoutes from './routes/account';
import adminRoutes from './routes/admin';
import keyRoutes from './routes/keys';
import licenceKeyRoutes from './routes/licence-keys';
import licenceRoutes from './routes/licences';
import signInRoutes from './routes/sign-in';
import staticRoutes from './routes/static';
import usageRoutes from './routes/usage';
import { installSessions } from './session';
import { failurePage, notFoundPage } from './views/errors';

export interface BackOfficeOptions {
  config: Config;
  store: AsyncStore;
  accounts: AccountService;
  licences: LicenceService;
  deviceKeys: DeviceKeyService;
  now?: () => Date;
  /** The CSRF tokens' secret (32 bytes or more); default: the store's shared setting (random per process on LMDB, one for every node on PostgreSQL). */
  csrfSecret?: Buffer;
}

/** The shared setting holding the CSRF tokens' secret: every node must accept the forms any node served. */
const CSRF_SECRET = 'back-office-csrf';

const backOfficeScope: FastifyPluginAsync<BackOfficeOptions> = async (scope, opts) => {
  const now = opts.now ?? (() => new Date());
  const store = opts.store;
  const ctx: BackOfficeContext = {
    config: opts.config,
    accounts: opts.accounts,
    licences: opts.licences,
    deviceKeys: opts.deviceKeys,
    activationCodes: new ActivationCodes(store.activationCodes),
    keyUsage: store.keyUsage,
    reveals: new OneTimeReveals(() => now().getTime()),
    csrf: new CsrfTokens(opts.csrfSecret ?? await store.settings.secret(CSRF_SECRET, 32)),
    now,
  };

  // Pages for browsers, not API clients: kept out of the OpenAPI document.
  scope.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });

  await scope.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'"],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
    },
    referrerPolicy: { policy: 'no-referrer' },
    crossOriginEmbedderPolicy: false,
  });
  acceptFormBodies(scope);
  installSessions(scope, ctx);

  scope.setNotFoundHandler((request, reply) => {
    const visitor = request.visitor;
    return sendPage(reply, notFoundPage({ operator: visitor?.operator, csrf: visitor?.csrf ?? '' }), 404);
  });

  // A refusal the routes did not word themselves (a body over the limit, another content type) is a page with
  // its message; a fault is a page with the Request-Id to quote, its detail only in the log.
  scope.setErrorHandler((err: FastifyError, request, reply) => {
    const visitor = request.visitor;
    const frame = { operator: visitor?.operator, csrf: visitor?.csrf ?? '', requestId: request.id };
    let status = 500;
    let message: string | undefined;
    if (err instanceof DatabaseUnavailableError) {
      // Nothing was done; the page says to try again, as the JSON API's 503 with Retry-After does.
      reply.header('Retry-After', '1');
      return sendPage(reply, failurePage({ ...frame, status: 503, message: 'The service cannot reach its database just now; try again in a moment.' }), 503);
    }
    try {
      ({ status, message } = refusalOf(err));
    } catch {
      const code = err.statusCode ?? 500;
      if (code >= 400 && code < 500) {
        status = code;
        message = code === 413 ? 'The form is too large.' : code === 415 ? 'Send the form from its page.' : 'The request was refused.';
      } else {
        request.log.error({ err }, 'back-office request failed');
      }
    }
    return sendPage(reply, failurePage({ ...frame, status, message }), status);
  });

  const routes = { ctx };
  await scope.register(staticRoutes);
  await scope.register(signInRoutes, routes);
  await scope.register(accountRoutes, routes);
  await scope.register(keyRoutes, routes);
  await scope.register(licenceRoutes, routes);
  await scope.register(licenceKeyRoutes, routes);
  await scope.register(usageRoutes, routes);
  await scope.register(adminRoutes, routes);
};

/** Registers the back-office under /back-office (cloud mode). */
const backOffice: FastifyPluginAsync<BackOfficeOptions> = async (app, opts) => {
  await app.register(backOfficeScope, { ...opts, prefix: BASE });
};

export default backOffice;
