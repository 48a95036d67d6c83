// Answers of the back-office: HTML pages (never cached: they can hold keys and installation commands) and
// the 303 redirect that ends every successful form (POST-redirect-GET: a reload does not send it again).
import type { FastifyReply } from 'fastify';
import type { Html } from './html';

export function sendPage(reply: FastifyReply, page: Html, status = 200): FastifyReply {
  return reply.code(status).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(page.text);
}

export function redirectTo(reply: FastifyReply, location: string): FastifyReply {
  return reply.code(303).header('location', location).header('cache-control', 'no-store').send();
}
