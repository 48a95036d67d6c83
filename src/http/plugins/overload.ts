// Load shedding: a request the service cannot serve soon is answered at once with 503 SERVICE_UNAVAILABLE
// and Retry-After, instead of queueing without limit while its client times out anyway.
//   - while the server drains (SIGTERM): every request, with Connection: close;
//   - the longest event-loop delay of the last half second or so above [server] max_event_loop_delay_ms: every
//     request (the longest, not the mean: one stall of seconds hides among a thousand on-time ticks);
//   - face-analysis requests (routes with config.engine) in flight, or the engine's own queue, above
//     [server] max_engine_queue: further face-analysis requests only. Other routes (GET person, docs) and
//     unauthenticated requests (401 first: this runs after the auth hook) are never refused by it.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCatalog } from '../../errors';
import { LoopDelayWindow } from '../../ops/loop-delay-window';
import { sendApiError } from './error-handler';
import { globalPlugin } from './global-plugin';

/** Seconds a refused client is asked to wait. */
export const RETRY_AFTER_SECONDS = 1;
/** A delay counts for 0.5 to 1 s after it ends. */
const WINDOW_MS = 500;
const RESOLUTION_MS = 10;

export type OverloadOptions = {
  errors: ErrorCatalog;
  maxEventLoopDelayMs: number;
  maxEngineQueue: number;
  /** The engine's queued and running analyses (0 when the engine does not report it). */
  enginePending: () => number;
};

const overload: FastifyPluginAsync<OverloadOptions> = async (app, opts) => {
  let draining = false;
  let inFlight = 0;
  let currentDelayMs = () => 0;

  if (opts.maxEventLoopDelayMs > 0) {
    const window = new LoopDelayWindow({ resolutionMs: RESOLUTION_MS, windowMs: WINDOW_MS }).start();
    currentDelayMs = () => window.longestMs();
    // Start-up (module loading, the gallery rebuild) is not overload: count from the moment the app is ready.
    app.addHook('onReady', async () => window.forget());
    app.addHook('onClose', async () => window.stop());
  }
  app.addHook('preClose', async () => {
    draining = true;
  });
  // Requests already running when the drain began: their connections close after the answer, so the
  // server's close does not wait out keep-alive.
  app.addHook('onSend', async (request, reply, payload) => {
    if (draining) reply.header('Connection', 'close');
    return payload;
  });

  const refuse = (request: FastifyRequest, reply: FastifyReply, detail: string) => {
    reply.header('Retry-After', String(RETRY_AFTER_SECONDS));
    return sendApiError(request, reply, opts.errors.create('ServiceUnavailable', detail));
  };

  app.addHook('onRequest', async (request, reply) => {
    if (draining) {
      reply.header('Connection', 'close');
      return refuse(request, reply, 'shutting down');
    }
    const delay = currentDelayMs();
    if (opts.maxEventLoopDelayMs > 0 && delay > opts.maxEventLoopDelayMs) {
      return refuse(request, reply, `event-loop delay ${delay.toFixed(0)} ms over [server] max_event_loop_delay_ms`);
    }
    if (!request.routeOptions.config?.engine) return;
    const queue = Math.max(inFlight, opts.enginePending());
    if (opts.maxEngineQueue > 0 && queue >= opts.maxEngineQueue) {
      return refuse(request, reply, `${queue} face analyses in flight, [server] max_engine_queue=${opts.maxEngineQueue}`);
    }
    inFlight++;
    reply.raw.once('close', () => inFlight--);
  });
};

export default globalPlugin(overload, 'overload');
