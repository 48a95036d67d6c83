// Signing in and out, and registration. Sign-in attempts are throttled per account and per address by the
// AccountService (the same throttle as the account API's); the page says how long to wait.
import type { FastifyPluginAsync } from 'fastify';
import type { BackOfficeContext } from '../context';
import { clearedSessionCookie, sessionCookie } from '../cookies';
import { field, type FormBody } from '../form-body';
import { noticeOf, withNotice } from '../notices';
import { PATHS } from '../paths';
import { refusalOf } from '../problems';
import { redirectTo, sendPage } from '../respond';
import { visitorOf } from '../session';
import { hashSessionToken } from '../../storage/records';
import { registerPage, registrationOffered } from '../views/register';
import { signInPage } from '../views/sign-in';

const signInRoutes: FastifyPluginAsync<{ ctx: BackOfficeContext }> = async (app, { ctx }) => {
  const mode = ctx.config.accounts.registration;
  const registrationOpen = registrationOffered(mode);
  const minPasswordLength = ctx.config.accounts.min_password_length;

  /** Starts a session and sets its cookie. */
  const startSession = async (reply: Parameters<typeof redirectTo>[0], secure: boolean, email: string, password: string, address: string) => {
    const session = await ctx.accounts.signIn(email, password, address);
    reply.header('set-cookie', sessionCookie(session.token, { secure, expires: new Date(session.expires) }));
    return session;
  };

  app.get('/', { config: { backOffice: 'public' } }, async (request, reply) =>
    redirectTo(reply, visitorOf(request).operator ? PATHS.account : PATHS.signIn));

  app.get('/sign-in', { config: { backOffice: 'public' } }, async (request, reply) => {
    const visitor = visitorOf(request);
    if (visitor.operator) return redirectTo(reply, PATHS.account);
    return sendPage(reply, signInPage({ csrf: visitor.csrf, registrationOpen, notice: noticeOf(request.query) }));
  });

  app.post('/sign-in', { config: { backOffice: 'public' } }, async (request, reply) => {
    const visitor = visitorOf(request);
    const form = request.body as FormBody;
    const email = field(form, 'email');
    try {
      await startSession(reply, visitor.secure, email, field(form, 'password'), request.ip);
    } catch (err) {
      const refusal = refusalOf(err);
      return sendPage(reply, signInPage({ csrf: visitor.csrf, registrationOpen, email, problem: refusal.message }), refusal.status);
    }
    return redirectTo(reply, PATHS.account);
  });

  app.get('/register', { config: { backOffice: 'public' } }, async (request, reply) => {
    const visitor = visitorOf(request);
    if (visitor.operator) return redirectTo(reply, PATHS.account);
    return sendPage(reply, registerPage({ csrf: visitor.csrf, mode, minPasswordLength }));
  });

  app.post('/register', { config: { backOffice: 'public' } }, async (request, reply) => {
    const visitor = visitorOf(request);
    const form = request.body as FormBody;
    const email = field(form, 'email');
    const password = field(form, 'password');
    const code = field(form, 'activationCode');
    try {
      const created = await ctx.accounts.register(email, password, request.ip, code === '' ? undefined : code);
      const session = await startSession(reply, visitor.secure, email, password, request.ip);
      // The free test plan's key is shown once, on the page this redirects to.
      ctx.reveals.put(hashSessionToken(session.token), { apiKey: created.apiKey });
    } catch (err) {
      const refusal = refusalOf(err);
      return sendPage(reply, registerPage({ csrf: visitor.csrf, mode, minPasswordLength, email, problem: refusal.message }),
        refusal.status);
    }
    return redirectTo(reply, withNotice(PATHS.newKey, 'registered'));
  });

  app.post('/sign-out', { config: { backOffice: 'public' } }, async (request, reply) => {
    const visitor = visitorOf(request);
    if (visitor.token) {
      await ctx.accounts.signOut(visitor.token);
      ctx.reveals.forget(visitor.binding);
    }
    reply.header('set-cookie', clearedSessionCookie(visitor.secure));
    return redirectTo(reply, withNotice(PATHS.signIn, 'signed-out'));
  });
};

export default signInRoutes;
