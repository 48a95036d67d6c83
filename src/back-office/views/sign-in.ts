// The sign-in page: e-mail address and password, and a link to registration.
import { html } from '../html';
import { PATHS } from '../paths';
import { csrfField, page, problem } from './layout';

export interface SignInForm {
  csrf: string;
  email?: string;
  problem?: string;
  notice?: string;
  registrationOpen: boolean;
}

export function signInPage(form: SignInForm) {
  return page({ title: 'Sign in', csrf: form.csrf, notice: form.notice }, html`
${problem(form.problem)}
<form method="post" action="${PATHS.signIn}" class="stack">
  ${csrfField(form.csrf)}
  <label for="email">E-mail address</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${form.email ?? ''}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <button type="submit">Sign in</button>
</form>
${form.registrationOpen ? html`<p>No account yet? <a href="${PATHS.register}">Register</a> for the free test plan.</p>` : ''}`);
}
