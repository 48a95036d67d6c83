// Changing the password: the current one and the new one. Every other session of the account ends.
import type { Operator } from '../../domain/accounts';
import { html } from '../html';
import { PATHS } from '../paths';
import { csrfField, page, problem } from './layout';

export function passwordPage(view: { operator: Operator; csrf: string; minPasswordLength: number; problem?: string; notice?: string }) {
  return page({ title: 'Change the password', operator: view.operator, csrf: view.csrf, current: 'password', notice: view.notice }, html`
<p>Changing the password signs out every other browser and account API session of this account.</p>
${problem(view.problem)}
<form method="post" action="${PATHS.password}" class="stack">
  ${csrfField(view.csrf)}
  <label for="current-password">Current password</label>
  <input id="current-password" name="currentPassword" type="password" autocomplete="current-password" required>
  <label for="new-password">New password</label>
  <input id="new-password" name="newPassword" type="password" autocomplete="new-password" required
    minlength="${view.minPasswordLength}" aria-describedby="new-password-hint">
  <p id="new-password-hint" class="hint">At least ${view.minPasswordLength} characters.</p>
  <button type="submit">Change the password</button>
</form>`);
}
