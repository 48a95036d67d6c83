// The confirmations a page shows after a redirect (?done=<name>): a fixed list, so the query string can only
// pick one of these texts and never put its own words on the page.
export const NOTICES = {
  'registered': 'Your account is ready, on the free test plan. Its API key is below.',
  'signed-out': 'You are signed out.',
  'password-changed': 'The password is changed; your other sessions are ended.',
  'key-revoked': 'The key is revoked: requests made with it are refused from now on.',
  'licence-added': 'The licence is added. Set its grants, then run its installation command on the device.',
  'licence-saved': 'The grants and settings are saved; the device gets them at its next check.',
  'licence-revoked': 'The licence is revoked; its device is refused at its next check.',
  'device-released': 'The device binding is released: the next device that checks in with the key binds.',
  'code-issued': 'The activation code is issued.',
  'device-key-revoked': 'The device key is revoked: the device refuses it from its next licence check.',
} as const;

export type NoticeName = keyof typeof NOTICES;

export function noticeOf(query: unknown): string | undefined {
  const name = (query as { done?: unknown } | undefined)?.done;
  return typeof name === 'string' && Object.hasOwn(NOTICES, name) ? NOTICES[name as NoticeName] : undefined;
}

export function withNotice(path: string, notice: NoticeName): string {
  return `${path}${path.includes('?') ? '&' : '?'}done=${notice}`;
}
