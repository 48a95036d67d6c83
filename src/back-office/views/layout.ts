// The page frame every back-office page shares: the document head (the one stylesheet and the one script,
// both served by the program), a skip link, the navigation for a signed-in operator, and the main content.
import type { Operator } from '../../domain/accounts';
import { CSRF_FIELD } from '../csrf';
import { html, type Html } from '../html';
import { PATHS } from '../paths';
import { COPY_SCRIPT, STYLESHEET } from '../static/assets';

export interface PageFrame {
  title: string;
  /** The signed-in operator, or undefined on the sign-in and registration pages. */
  operator?: Operator;
  /** The CSRF token of the session's forms (the sign-out button needs it). */
  csrf: string;
  /** Which navigation entry is the current page. */
  current?: 'account' | 'keys' | 'licences' | 'usage' | 'password' | 'admin';
  /** A confirmation shown at the top (after a redirect), from a fixed list of texts. */
  notice?: string;
}

function navigation(frame: PageFrame): Html {
  if (!frame.operator) return html``;
  const entries: [PageFrame['current'], string, string][] = [
    ['account', PATHS.account, 'Account'],
    ['keys', PATHS.keys, 'API keys'],
    ['licences', PATHS.licences, 'Licences'],
    ['usage', PATHS.usage, 'Usage'],
    ['password', PATHS.password, 'Password'],
  ];
  if (frame.operator.role === 'administrator') entries.push(['admin', PATHS.admin, 'Administration']);
  return html`<nav aria-label="Back-office">
  <ul class="nav">${entries.map(([id, href, text]) => html`
    <li><a href="${href}"${frame.current === id ? html` aria-current="page"` : ''}>${text}</a></li>`)}
  </ul>
  <form method="post" action="${PATHS.signOut}" class="sign-out">
    ${csrfField(frame.csrf)}
    <span class="who">${frame.operator.email}</span>
    <button type="submit">Sign out</button>
  </form>
</nav>`;
}

/** The hidden CSRF field every form carries. */
export function csrfField(token: string): Html {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${token}">`;
}

export function page(frame: PageFrame, main: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${frame.title} - face-check back-office</title>
<link rel="stylesheet" href="${STYLESHEET.url}">
<script src="${COPY_SCRIPT.url}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to the content</a>
<header class="top">
  <p class="brand"><a href="${PATHS.home}">face-check back-office</a></p>
  ${navigation(frame)}
</header>
<main id="main" tabindex="-1">
<h1>${frame.title}</h1>
${frame.notice ? html`<p class="notice" role="status">${frame.notice}</p>` : ''}
${main}
</main>
</body>
</html>
`;
}

/** An error box for a refused form, announced to screen readers. */
export function problem(message: string | undefined): Html {
  return message ? html`<p class="problem" role="alert">${message}</p>` : html``;
}
