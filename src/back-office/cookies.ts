// The back-office's session cookie, read and written without @fastify/cookie (its current version needs
// Node 22). Only one cookie matters here, so parsing is a plain split of the Cookie header.

export const SESSION_COOKIE = 'fc_session';
export const COOKIE_PATH = '/back-office';

/** The Cookie header's name=value pairs (first occurrence of a name wins, values %-decoded when valid). */
export function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  if (!header) return cookies;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    if (!name || cookies.has(name)) continue;
    try {
      cookies.set(name, decodeURIComponent(value));
    } catch {
      cookies.set(name, value);
    }
  }
  return cookies;
}

export interface SessionCookieOptions {
  /** Set over https: the browser then never sends the cookie over plain http. */
  secure: boolean;
  expires?: Date;
}

/** Set-Cookie for the session token: HttpOnly (no script reads it), SameSite=Strict (no cross-site send). */
export function sessionCookie(token: string, options: SessionCookieOptions): string {
  const parts = [`${SESSION_COOKIE}=${encodeURIComponent(token)}`, `Path=${COOKIE_PATH}`, 'HttpOnly', 'SameSite=Strict'];
  if (options.expires) parts.push(`Expires=${options.expires.toUTCString()}`);
  if (options.secure) parts.push('Secure');
  return parts.join('; ');
}

/** Set-Cookie that removes the session cookie from the browser. */
export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie('', { secure, expires: new Date(0) });
}
