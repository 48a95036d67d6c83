// Marks a plugin as not encapsulated, so its hooks and handlers apply to the whole application. This is
// what fastify-plugin does (fastify's documented "skip-override" symbol), without another dependency.
import type { FastifyPluginAsync } from 'fastify';

export function globalPlugin<O extends Record<string, unknown>>(plugin: FastifyPluginAsync<O>, name: string): FastifyPluginAsync<O> {
  const marked = plugin as FastifyPluginAsync<O> & Record<symbol, unknown>;
  marked[Symbol.for('skip-override')] = true;
  marked[Symbol.for('fastify.display-name')] = name;
  return plugin;
}
