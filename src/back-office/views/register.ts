// Registration: e-mail address and password; the account starts on the free test plan with one API key,
// which the next page shows once.
import { html } from '../html';
import { PATHS } from '../paths';
import { csrfField, page, problem } from './layout';

export interface RegisterForm {
  csrf: string;
  email?: string;
  problem?: string;
  minPasswordLength: number;
  open: boolean;
}

export function registerPage(form: RegisterForm) {
  if (!form.open) {
    return page({ title: 'Register', csrf: form.csrf }, html`
<p>Registration is closed on this service: ask its operators for an account.</p>
<p><a href="${PATHS.signIn}">Sign in</a></p>`);
  }
  return page({ title: 'Register', csrf: form.csrf }, html`
<p>A new account gets the free test plan and one API key.</p>
${problem(form.problem)}
<form method="post" action="${PATHS.register}" class="stack">
  ${csrfField(form.csrf)}
  <label for="email">E-mail address</label>
  <input id="email" name="email" type="email" autocomplete="email" required value="${form.email ?? ''}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" required
    minlength="${form.minPasswordLength}" aria-describedby="password-hint">
  <p id="password-hint" class="hint">At least ${form.minPasswordLength} characters.</p>
  <button type="submit">Register</button>
</form>
<p>Already registered? <a href="${PATHS.signIn}">Sign in</a>.</p>`);
}
