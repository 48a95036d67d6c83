// Who is asking: the signed-in operator of the session cookie (AccountService's sessions, with their
// server-side idle and absolute expiry), or nobody. Every request gets a CSRF binding: the session token's
// hash when signed in, else the hash of an anonymous form cookie, so the sign-in and registration forms are
// protected too. A route's `config.backOffice` says who may reach it: 'public', 'operator' (default) or
// 'administrator' (others get the not-found page: the page's existence is not revealed).
import crypto from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Operator } from '../domain/accounts';
import { ApiError } from '../errors';
import { hashSessionToken } from '../storage/records';
import type { BackOfficeContext } from './context';
import { clearedSessionCookie, COOKIE_PATH, parseCookies, SESSION_COOKIE } from './cookies';
import { CSRF_FIELD } from './csrf';
import { field, type FormBody } from './form-body';
import { PATHS } from './paths';
import { sendPage } from './respond';
import { forbiddenFormPage, notFoundPage } from './views/errors';

/** The anonymous visitor's cookie that the CSRF token of the sign-in and registration forms is bound to. */
export const FORM_COOKIE = 'fc_form';

export type Access = 'public' | 'operator' | 'administrator';

export interface Visitor {
  operator?: Operator;
  /** The session token (cookie), when signed in. */
  token?: string;
  /** What the CSRF token and the one-time secrets are bound to. */
  binding: string;
  csrf: string;
  secure: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A back-office route: who may reach it (default 'operator'). */
    backOffice?: Access;
  }
  interface FastifyRequest {
    visitor?: Visitor;
  }
}

/** The request's visitor (set for every back-office request by the hook below). */
export function visitorOf(request: FastifyRequest): Visitor {
  if (!request.visitor) throw new Error('back-office request without its visitor');
  return request.visitor;
}

/** The signed-in operator of a route that requires one. */
export function operatorOf(request: FastifyRequest): Operator {
  const operator = visitorOf(request).operator;
  if (!operator) throw new Error('back-office route reached without a signed-in operator');
  return operator;
}

/** Session cookies are Secure when the request came over https or the service's public address is https. */
function isSecure(ctx: BackOfficeContext, request: FastifyRequest): boolean {
  const publicUrl = ctx.config.licensing.public_url || ctx.config.auth.public_base_url;
  return request.protocol === 'https' || publicUrl.startsWith('https:');
}

function formCookie(value: string, secure: boolean): string {
  return [`${FORM_COOKIE}=${value}`, `Path=${COOKIE_PATH}`, 'HttpOnly', 'SameSite=Strict', ...(secure ? ['Secure'] : [])].join('; ');
}

async function signedIn(ctx: BackOfficeContext, token: string | undefined): Promise<Operator | undefined> {
  if (!token) return undefined;
  try {
    return await ctx.accounts.operatorOf(token);
  } catch (err) {
    if (err instanceof ApiError && err.statusCode === 401) return undefined; // unknown or expired session
    throw err;
  }
}

export function installSessions(scope: FastifyInstance, ctx: BackOfficeContext): void {
  scope.decorateRequest('visitor', undefined);

  scope.addHook('onRequest', async (request, reply) => {
    const secure = isSecure(ctx, request);
    const cookies = parseCookies(request.headers.cookie);
    const token = cookies.get(SESSION_COOKIE) || undefined;
    const operator = await signedIn(ctx, token);
    let binding: string;
    if (operator && token) {
      binding = hashSessionToken(token);
    } else {
      if (token) reply.header('set-cookie', clearedSessionCookie(secure));
      let anonymous = cookies.get(FORM_COOKIE);
      if (!anonymous || !/^[A-Za-z0-9_-]{43}$/.test(anonymous)) {
        anonymous = crypto.randomBytes(32).toString('base64url');
        reply.header('set-cookie', formCookie(anonymous, secure));
      }
      binding = crypto.createHash('sha256').update(`form ${anonymous}`).digest('hex');
    }
    request.visitor = { operator, token: operator ? token : undefined, binding, csrf: ctx.csrf.tokenFor(binding), secure };

    const access: Access = request.routeOptions.config?.backOffice ?? 'operator';
    if (access === 'public' || request.is404) return;
    if (!operator) {
      // Nothing is done for a visitor who is not signed in (a POST included): off to the sign-in page.
      return reply.code(303).header('location', PATHS.signIn).send();
    }
    if (access === 'administrator' && operator.role !== 'administrator') {
      return sendPage(reply, notFoundPage({ operator, csrf: request.visitor.csrf }), 404);
    }
  });

  // After the body is parsed: a form without the visitor's CSRF token changes nothing.
  scope.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST') return;
    const visitor = visitorOf(request);
    if (!ctx.csrf.verify(visitor.binding, field(request.body as FormBody | undefined, CSRF_FIELD))) {
      request.log.info('back-office form refused: missing or wrong CSRF token');
      return sendPage(reply, forbiddenFormPage({ operator: visitor.operator, csrf: visitor.csrf }), 403);
    }
  });
}
