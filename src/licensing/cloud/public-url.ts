// The cloud's address as devices see it: what installation commands and device inis name. An operator
// behind a proxy or a DNS name sets [licensing] public_url (or [auth] public_base_url, which clients
// already sign against); without either, the listening address is the best guess.
import os from 'node:os';
import type { Config } from '../../config/types';

/** `actualPort`: the port really listened on, for a [server] port of 0 (tests). */
export function publicUrl(config: Config, actualPort?: number): string {
  if (config.licensing.public_url) return config.licensing.public_url;
  if (config.auth.public_base_url) return config.auth.public_base_url;
  const port = config.server.port === 0 && actualPort !== undefined ? actualPort : config.server.port;
  return `http://${reachableHost(config.server.host)}:${port}`;
}

/** A wildcard listening address is no address to dial: the machine's name stands in for it. */
function reachableHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '[::]') return os.hostname();
  if (host.includes(':') && !host.startsWith('[')) return `[${host}]`;
  return host;
}
