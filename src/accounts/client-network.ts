// The network a client address belongs to, for limits one client could otherwise dodge by taking the next
// address: an IPv4 /24, an IPv6 /64 (what one household or server is typically given). An IPv4 address
// mapped into IPv6 (::ffff:192.0.2.1) is the IPv4 address. The address is the one fastify reports
// (request.ip), which follows [server] trust_proxy.
import net from 'node:net';

const IPV4_PREFIX_OCTETS = 3;
const IPV6_PREFIX_GROUPS = 4;

/** "192.0.2.0/24", "2001:db8:1:2::/64"; an address that is neither IPv4 nor IPv6 stands for itself. */
export function clientNetwork(address: string): string {
  const bare = address.replace(/%.*$/, '');  // an IPv6 zone (fe80::1%eth0)
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  const v4 = mapped ? mapped[1] : bare;
  if (net.isIPv4(v4)) return `${v4.split('.').slice(0, IPV4_PREFIX_OCTETS).join('.')}.0/24`;
  if (net.isIPv6(bare)) return `${expandedIpv6(bare).slice(0, IPV6_PREFIX_GROUPS).join(':')}::/64`;
  return address;
}

/** The eight groups of an IPv6 address, lower-case hex without leading zeros. */
function expandedIpv6(address: string): string[] {
  let text = address.toLowerCase();
  // A trailing dotted IPv4 part is two groups.
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number);
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = rest !== undefined && rest !== '' ? rest.split(':') : [];
  const zeros = rest === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => parseInt(g, 16).toString(16));
}
