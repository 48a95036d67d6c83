// The back-office's addresses, in one place so that links, redirects and routes cannot drift apart.
export const BASE = '/back-office';

export const PATHS = {
  home: `${BASE}/`,
  signIn: `${BASE}/sign-in`,
  register: `${BASE}/register`,
  signOut: `${BASE}/sign-out`,
  account: `${BASE}/account`,
  password: `${BASE}/password`,
  keys: `${BASE}/keys`,
  newKey: `${BASE}/keys/new`,
  signingKeyDownload: `${BASE}/keys/new/signing-key.pem`,
  revokeKey: (keyId: string) => `${BASE}/keys/${encodeURIComponent(keyId)}/revoke`,
  licences: `${BASE}/licences`,
  licence: (licenceId: string) => `${BASE}/licences/${encodeURIComponent(licenceId)}`,
  licenceGrants: (licenceId: string) => `${BASE}/licences/${encodeURIComponent(licenceId)}/grants`,
  revokeLicence: (licenceId: string) => `${BASE}/licences/${encodeURIComponent(licenceId)}/revoke`,
  releaseLicence: (licenceId: string) => `${BASE}/licences/${encodeURIComponent(licenceId)}/release`,
  deviceKeys: (licenceId: string) => `${BASE}/licences/${encodeURIComponent(licenceId)}/keys`,
  newDeviceKey: (licenceId: string) => `${BASE}/licences/${encodeURIComponent(licenceId)}/keys/new`,
  revokeDeviceKey: (licenceId: string, keyId: string) =>
    `${BASE}/licences/${encodeURIComponent(licenceId)}/keys/${encodeURIComponent(keyId)}/revoke`,
  usage: `${BASE}/usage`,
  admin: `${BASE}/admin`,
  adminCodes: `${BASE}/admin/activation-codes`,
} as const;
