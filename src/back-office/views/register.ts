// Registration: e-mail address and password (and, when [accounts] registration asks for one, the registration
// or invitation code); the account starts on the free test plan (or the code's plan) with one API key, which
// the next page shows once.
import type { AccountsConfig } from '../../config/types';
import { html } from '../html';
import { PATHS } from '../paths';
import { csrfField, page, problem } from './layout';

export interface RegisterForm {
  csrf: string;
  email?: string;
  problem?: string;
  minPasswordLength: number;
  mode: AccountsConfig['registration'];
}

/** Whether the page offers a registration form at all. */
export function registrationOffered(mode: AccountsConfig['registration']): boolean {
  return mode !== 'closed';
}

export function registerPage(form: RegisterForm) {
  if (!registrationOffered(form.mode)) {
    return page({ title: 'Register', csrf: form.csrf }, html`
<p>Registration is closed on this service: ask its operators for an account.</p>
<p><a href="${PATHS.signIn}">Sign in</a></p>`);
  }
  const codeNeeded = form.mode !== 'open';
  const intro = form.mode === 'invitation'
    ? 'Accounts on this service are by invitation: register with the e-mail address that was invited and the code it was sent.'
    : form.mode === 'activation-code'
      ? 'Registration on this service needs a registration code from its operators.'
      : 'A new account gets the free test plan and one API key.';
  return page({ title: 'Register', csrf: form.csrf }, html`
<p>${intro}</p>
${problem(form.problem)}
<form method="post" action="${PATHS.register}" class="stack">
  ${csrfField(form.csrf)}
  <label for="email">E-mail address</label>
  <input id="email" name="email" type="email" autocomplete="email" required value="${form.email ?? ''}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" required
    minlength="${form.minPasswordLength}" aria-describedby="password-hint">
  <p id="password-hint" class="hint">At least ${form.minPasswordLength} characters; a few words with spaces make a good one. Common passwords are refused.</p>
  ${codeNeeded ? html`<label for="activationCode">${form.mode === 'invitation' ? 'Invitation code' : 'Registration code'}</label>
  <input id="activationCode" name="activationCode" type="text" autocomplete="off" required
    placeholder="XXXX-XXXX-XXXX-XXXX">` : ''}
  <button type="submit">Register</button>
</form>
<p>Already registered? <a href="${PATHS.signIn}">Sign in</a>.</p>`);
}
