// One value of a request header: the first when sent twice, trimmed, undefined when absent or blank.
import type { FastifyRequest } from 'fastify';

export function headerValue(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return (Array.isArray(v) ? v[0] : v)?.trim() || undefined;
}
