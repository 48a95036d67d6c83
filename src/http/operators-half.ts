// Cloud mode's operators' half: accounts (a session hook for their routes), licences, the licence server,
// the package devices install, and the back-office pages, a view over the same services. A device
// registers none of it.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/types';
import type { ErrorCatalog } from '../errors';
import { AccountService } from '../accounts/accounts';
import { LicenceServer, type LicenceKeyState } from '../licensing/cloud/licence-server';
import { DeviceKeyService } from '../licensing/cloud/licence-device-keys';
import { LicenceService } from '../licensing/cloud/licences';
import { PackageFile } from '../install/package-file';
import { publicUrl } from '../licensing/cloud/public-url';
import type { AsyncStore } from '../storage/interfaces';
import backOffice from '../back-office/plugin';
import operatorSession from './plugins/operator-session';
import accountApi from './routes/account-api';
import licenceApi from './routes/licence-api';
import licenceFiles from './routes/licence-files';
import licenceKeysApi from './routes/licence-keys-api';

export interface OperatorsDeps {
  config: Config;
  store: AsyncStore;
  errors: ErrorCatalog;
  now: () => Date;
  /** The package devices install; default: this program packed once per version. */
  packageFile?: PackageFile;
  /** A licence key's state for the package download; default: the licence server's. */
  licenceKeyState?: (key: string) => LicenceKeyState | Promise<LicenceKeyState>;
}

/** The accounts service and the session hook of its routes: registered right after the API key hook. */
export async function registerOperatorSessions(app: FastifyInstance, deps: OperatorsDeps): Promise<void> {
  const accounts = new AccountService({ config: deps.config, store: deps.store, errors: deps.errors, now: deps.now });
  app.decorate('accounts', accounts);
  await app.register(operatorSession, { accounts, errors: deps.errors });
  // The OpenAPI document names the bearer scheme on every route that needs a signed-in operator.
  app.addHook('onRoute', (route) => {
    if (route.config?.operator && route.schema && !route.schema.security) route.schema.security = [{ OperatorSession: [] }];
  });
}

/** The account, licence and licence-server routes and the back-office (after registerOperatorSessions). */
export async function registerOperatorRoutes(app: FastifyInstance, deps: OperatorsDeps): Promise<void> {
  const { config, store, errors, now } = deps;
  await app.register(accountApi, { errors });
  // One package for the download and the licence lines' installation commands.
  const packageFile = deps.packageFile ?? new PackageFile(config);
  const licenceServer = new LicenceServer({ config, store, errors, now });
  const licences = new LicenceService({
    config, store, errors, now,
    devicePackage: () => packageFile.get(),
    // A [server] port of 0 (tests) is named by the port really listened on.
    serverUrl: () => {
      const address = app.server.address();
      return publicUrl(config, typeof address === 'object' && address ? address.port : undefined);
    },
  });
  app.decorate('licences', licences);
  if (!config.licensing.public_url && /^https?:\/\/(127\.|localhost|\[::1\])/.test(publicUrl(config))) {
    app.log.warn({ url: publicUrl(config) }, 'installation commands name a loopback address no device can reach: set [licensing] public_url');
  }
  const deviceKeys = new DeviceKeyService({ store, errors, now, licences });
  // Said at start, not first at an operator's click: a package without its prebuilds is not served.
  void packageFile.check().then(
    (missing) => { if (missing) app.log.warn({ missing: missing.missing }, `devices cannot be installed: ${missing.message}`); },
    (err: Error) => app.log.warn(`devices cannot be installed: the device package cannot be read: ${err.message}`));
  await app.register(licenceApi, { errors, licences, server: licenceServer });
  await app.register(licenceKeysApi, { errors, deviceKeys });
  await app.register(backOffice, { config, store, accounts: app.accounts, licences, deviceKeys, now });
  await app.register(licenceFiles, {
    errors,
    publicKey: async () => (await store.serviceKeys.responseSigning()).publicKey,
    packageFile,
    licenceKeyState: deps.licenceKeyState ?? ((key) => licenceServer.keyState(key)),
  });
}
