// The account overview and the password change (AccountService.changePassword: the current password is
// checked under the sign-in throttle, and every other session of the account ends).
import type { FastifyPluginAsync } from 'fastify';
import type { BackOfficeContext } from '../context';
import { field, type FormBody } from '../form-body';
import { noticeOf, withNotice } from '../notices';
import { PATHS } from '../paths';
import { refusalOf } from '../problems';
import { redirectTo, sendPage } from '../respond';
import { operatorOf, visitorOf } from '../session';
import { accountPage } from '../views/account';
import { passwordPage } from '../views/password';

const accountRoutes: FastifyPluginAsync<{ ctx: BackOfficeContext }> = async (app, { ctx }) => {
  const minPasswordLength = ctx.config.accounts.min_password_length;

  app.get('/account', async (request, reply) => {
    const operator = operatorOf(request);
    const account = await ctx.accounts.accountView(operator.accountId);
    if (!account) throw new Error('signed-in account without its record');
    return sendPage(reply, accountPage({ operator, csrf: visitorOf(request).csrf, account, notice: noticeOf(request.query) }));
  });

  app.get('/password', async (request, reply) =>
    sendPage(reply, passwordPage({ operator: operatorOf(request), csrf: visitorOf(request).csrf, minPasswordLength, notice: noticeOf(request.query) })));

  app.post('/password', async (request, reply) => {
    const operator = operatorOf(request);
    const visitor = visitorOf(request);
    const body = request.body as FormBody;
    try {
      await ctx.accounts.changePassword(operator, visitor.token!, field(body, 'currentPassword'), field(body, 'newPassword'));
    } catch (err) {
      const refusal = refusalOf(err);
      return sendPage(reply, passwordPage({ operator, csrf: visitor.csrf, minPasswordLength, problem: refusal.message }), refusal.status);
    }
    return redirectTo(reply, withNotice(PATHS.password, 'password-changed'));
  });
};

export default accountRoutes;
