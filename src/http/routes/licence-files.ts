// What a device's installation needs from the cloud (cloud mode, no Api-Key: a device has none):
//   GET /licence/v1/public-key  the key licence documents are signed with, and its sha256 (the installation
//                               command pins that sha256, so the device trusts this key only if it matches);
//   GET /licence/v1/package     the npm package of the running version, for a valid Licence-Key only.
import fs from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import type { ErrorCatalog } from '../../errors';
import { publicKeySha256 } from '../../licensing/licence-document';
import type { LicenceKeyState } from '../../licensing/cloud/licence-server';
import { PackagePrebuildsMissing, type PackageInfo } from '../../install/package-file';
import { headerValue } from '../request-header';
import { errorResponses } from '../schemas';

export interface LicenceFilesOptions {
  errors: ErrorCatalog;
  /** The cloud's public key (PEM, SPKI): the service key pair's public half. */
  publicKey: () => Promise<string>;
  packageFile: { get(): Promise<PackageInfo> };
  licenceKeyState: (key: string) => LicenceKeyState | Promise<LicenceKeyState>;
}

const LICENCE_KEY = /^fcl_[A-Za-z0-9_-]{32}$/;

const licenceFiles: FastifyPluginAsync<LicenceFilesOptions> = async (app, opts) => {
  const { errors } = opts;

  app.get('/licence/v1/public-key', {
    schema: {
      summary: 'The licence server public key',
      description: 'The RSA public key (PEM, SubjectPublicKeyInfo) that signs licence documents, and the SHA-256 ' +
        '(hex) of its DER encoding, which installation commands pin. No Api-Key.',
      tags: ['licence'],
      response: {
        200: {
          type: 'object', required: ['publicKey', 'sha256'], additionalProperties: false,
          properties: {
            publicKey: { type: 'string', description: 'PEM, -----BEGIN PUBLIC KEY-----' },
            sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
          },
        },
        ...errorResponses({ 500: ['INTERNAL'], 503: ['SERVICE_UNAVAILABLE'] }),
      },
    },
  }, async () => {
    const publicKey = await opts.publicKey();
    return { publicKey, sha256: publicKeySha256(publicKey) };
  });

  app.get('/licence/v1/package', {
    schema: {
      summary: 'The device package',
      description: 'The npm package (npm pack tarball) of the running version, which the installation command ' +
        'installs after checking its SHA-256 (also sent as X-Package-Sha256). Needs the Licence-Key header of an ' +
        'active licence. A cloud whose package lacks the prebuilt addon of a board platform serves none (503): ' +
        'installing it would compile the addon on the device.',
      tags: ['licence'],
      headers: {
        type: 'object', required: ['licence-key'],
        properties: { 'licence-key': { type: 'string', description: 'fcl_... (the licence key)' } },
      },
      response: {
        200: {
          description: 'The tarball (application/gzip)',
          content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } },
        },
        ...errorResponses({ 401: ['LC_005'], 403: ['LC_006', 'LC_007'], 500: ['INTERNAL'], 503: ['SERVICE_UNAVAILABLE'] }),
      },
    },
    // The key is judged here, with the licence errors, not by the schema's R_003.
    attachValidation: true,
  }, async (request, reply) => {
    const key = headerValue(request, 'licence-key');
    if (!key) throw errors.explain('LicenceKeyUnknown', 'send the licence key in the Licence-Key header');
    if (!LICENCE_KEY.test(key)) throw errors.explain('LicenceKeyUnknown', 'the Licence-Key header is not a licence key (fcl_...)');
    switch (await opts.licenceKeyState(key)) {
      case 'active':
        break;
      case 'unknown':
        throw errors.explain('LicenceKeyUnknown', 'no licence has this key; copy the installation command again from the licence line');
      case 'revoked':
        throw errors.explain('LicenceRevoked', 'this licence was revoked; add a new licence and use its installation command');
      case 'expired':
        throw errors.explain('LicenceExpired', 'this licence has expired; renew it or add a new licence');
    }
    const pkg = await opts.packageFile.get().catch((err: unknown) => {
      throw err instanceof PackagePrebuildsMissing ? errors.explain('ServiceUnavailable', err.publicReason) : err;
    });
    const name = `face-check-${pkg.version}.tgz`;
    return reply
      .type('application/gzip')
      .header('content-length', String(pkg.size))
      .header('content-disposition', `attachment; filename="${name}"`)
      .header('x-package-sha256', pkg.sha256)
      .header('x-package-version', pkg.version)
      .send(fs.createReadStream(pkg.path));
  });
};

export default licenceFiles;
