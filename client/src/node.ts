// The Node entry: the browser-safe client plus file paths as images and request signing (node:fs,
// node:crypto). `import { FaceCheckClient } from '@face-check/client/node'`.
import { readFile } from 'node:fs/promises';
import { FaceCheckClient as BaseClient, type ClientOptions } from './client';
import { FaceCheckError } from './errors';
import { NodeRequestSigner, type KeyInput } from './node-signing';

export * from './index';
export { NodeRequestSigner, type KeyInput, type NodeSignerOptions } from './node-signing';

export interface NodeClientOptions extends ClientOptions {
  /** Enterprise keys: the key's private half (PEM), printed once by `face-check keys create --signing`. */
  signingKey?: KeyInput;
  /** With signingKey: the service's public key (PEM, `face-check keys service-public-key`); every answer is checked with it. */
  servicePublicKey?: KeyInput;
}

export class FaceCheckClient extends BaseClient {
  constructor(options: NodeClientOptions) {
    const { signingKey, servicePublicKey, ...rest } = options;
    if (signingKey && !servicePublicKey) {
      throw new FaceCheckError('a signingKey needs the servicePublicKey too: every answer is verified with it');
    }
    super({
      readFile: async (path) => readFile(path),
      ...rest,
      signer: rest.signer ?? (signingKey && servicePublicKey ? new NodeRequestSigner({ signingKey, servicePublicKey }) : undefined),
    });
  }
}
