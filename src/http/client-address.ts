// The key a client address is counted under by the rate limits (tracking,
// login): an IPv4 address as is (also when written IPv4-mapped,
// `::ffff:a.b.c.d`), an IPv6 address by its /64 prefix. One subscriber or LAN
// gets a whole /64 and can pick any address in it, so counting single IPv6
// addresses would let one client multiply its budget by 2^64.
import net from 'node:net';

export function clientAddressKey(ip: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (net.isIPv6(ip)) return `${ipv6Prefix64(ip)}::/64`;
  return ip;
}

/** The first four 16-bit groups of an IPv6 address, in lower-case hex without leading zeros. */
function ipv6Prefix64(ip: string): string {
  const addr = ip.split('%')[0]!.toLowerCase(); // drop a zone id
  const [head = '', tail] = addr.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  // an embedded IPv4 tail (::a.b.c.d) takes two groups; only the first four groups matter here
  const width = (groups: string[]) => groups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - width(left) - width(right)).fill('0'), ...right];
  return groups
    .slice(0, 4)
    .map((g) => (g.includes('.') ? '0' : g.replace(/^0+(?=.)/, '')))
    .join(':');
}
