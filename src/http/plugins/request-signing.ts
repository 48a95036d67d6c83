// Request signing (spec 5) for keys that have a signing key: the signature is checked after
// authentication and before the body is judged (so 401 still comes first), and every response to such a
// key's request carries the service's Signature and Timestamp headers.
import { globalPlugin } from './global-plugin';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { RequestSigning } from '../../services/request-signing';
import { headerValue } from '../request-header';

const requestSigning: FastifyPluginAsync<{ signing: RequestSigning; publicBaseUrl: string }> = async (app, opts) => {
  // Behind a proxy the Host the service sees may not be the one the client signed: set [auth] public_base_url.
  const baseUrl = (request: FastifyRequest) => opts.publicBaseUrl || `${request.protocol}://${request.host}`;

  app.addHook('preValidation', async (request) => {
    const publicKey = request.principal?.signingPublicKey;
    if (!publicKey) return;
    await opts.signing.verifyRequest({
      publicKey, baseUrl: baseUrl(request), uri: request.url, body: request.rawBody ?? '',
      signature: headerValue(request, 'signature'), timestamp: headerValue(request, 'timestamp'),
    });
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.principal?.signingPublicKey) return payload;
    // JSON bodies arrive here as text, error bodies pre-serialised as a Buffer (error-handler.ts).
    let body: string;
    if (payload === null || payload === undefined) body = '';
    else if (typeof payload === 'string') body = payload;
    else if (Buffer.isBuffer(payload)) body = payload.toString('utf8');
    else return payload;  // a stream: no route of this API sends one
    const { signature, timestamp } = await opts.signing.signResponse(baseUrl(request), request.url, body);
    reply.header('Signature', signature);
    reply.header('Timestamp', timestamp);
    return payload;
  });
};

export default globalPlugin(requestSigning, 'request-signing');
