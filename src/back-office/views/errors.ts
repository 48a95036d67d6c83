// Pages for requests the back-office refuses: not found (also what another account's key or licence looks
// like, so ids reveal nothing), a form without its CSRF token, and an unexpected failure.
import type { Operator } from '../../domain/accounts';
import { html } from '../html';
import { PATHS } from '../paths';
import { page } from './layout';

interface Frame {
  operator?: Operator;
  csrf: string;
}

export function notFoundPage(frame: Frame) {
  return page({ title: 'Not found', ...frame }, html`
<p>There is nothing at this address in your account.</p>
<p><a href="${frame.operator ? PATHS.account : PATHS.signIn}">Back to the back-office</a></p>`);
}

export function forbiddenFormPage(frame: Frame) {
  return page({ title: 'Form refused', ...frame }, html`
<p>The form was sent without its security token, or with one that is no longer valid (for example after you
signed in again or the service restarted). Nothing was changed.</p>
<p>Go back, reload the page and send the form again.</p>`);
}

export function failurePage(frame: Frame & { requestId: string; message?: string; status: number }) {
  return page({ title: frame.status >= 500 ? 'Something went wrong' : 'Request refused', operator: frame.operator, csrf: frame.csrf }, html`
<p>${frame.message ?? 'The request could not be completed. Nothing was changed that was not shown as done.'}</p>
<p class="hint">Request-Id: <code>${frame.requestId}</code></p>`);
}
