// Client addresses for geo-IP: which are public (only those are located), and
// their numeric forms (a 32-bit number; eight 16-bit groups).
import net from 'node:net';
import { SPECIAL_RANGES, splitCidr } from '../ip-ranges.ts';

/** IPv4 ranges with no location: [first address as a 32-bit number, prefix length]. */
const V4_NOT_PUBLIC: [number, number][] = SPECIAL_RANGES.flatMap((r) => r.v4.map(splitCidr)).map(([a, p]) => [v4Number(a), p]);

/** IPv6 ranges with no location: [the 8 groups, prefix length]. */
const V6_NOT_PUBLIC: [number[], number][] = SPECIAL_RANGES.flatMap((r) => r.v6.map(splitCidr)).map(([a, p]) => [v6Groups(a)!, p]);

/** A valid dotted-quad IPv4 address as a 32-bit number. */
export function v4Number(ip: string): number {
  let n = 0;
  let octet = 0;
  for (let i = 0; i < ip.length; i++) {
    const c = ip.charCodeAt(i);
    if (c === 46) {
      n = (n << 8) | octet;
      octet = 0;
    } else octet = octet * 10 + c - 48;
  }
  return ((n << 8) | octet) >>> 0;
}

/** The 8 groups of a syntactically valid IPv6 address (an IPv4 tail becomes two groups). */
export function v6Groups(ip: string): number[] | null {
  let s = ip;
  const colon = s.lastIndexOf(':');
  if (s.includes('.', colon)) {
    const o = s
      .slice(colon + 1)
      .split('.')
      .map(Number);
    s = `${s.slice(0, colon + 1)}${(((o[0]! << 8) | o[1]!) >>> 0).toString(16)}:${(((o[2]! << 8) | o[3]!) >>> 0).toString(16)}`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const left = head ? head.split(':').map((h) => parseInt(h, 16)) : [];
  const right = rest ? rest.split(':').map((h) => parseInt(h, 16)) : [];
  const fill = 8 - left.length - right.length;
  if (fill < 0 || (rest === undefined && fill !== 0)) return null;
  const out = [...left, ...new Array<number>(fill).fill(0), ...right];
  return out.every((g) => g >= 0 && g <= 0xffff) ? out : null;
}

function inV6(g: number[], [base, prefix]: [number[], number]): boolean {
  for (let i = 0, bits = prefix; bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if ((g[i]! & mask) !== (base[i]! & mask)) return false;
  }
  return true;
}

function publicV4(ip: string): [string, 4] | null {
  const n = v4Number(ip);
  for (const [base, prefix] of V4_NOT_PUBLIC) {
    if ((n ^ base) >>> (32 - prefix) === 0) return null;
  }
  return [ip, 4];
}

/**
 * A public address as `[address, 4 | 6]`, IPv4-mapped IPv6 (::ffff:a.b.c.d)
 * unwrapped and any zone index dropped; null for anything else.
 */
export function publicAddress(raw: string): [string, 4 | 6] | null {
  if (typeof raw !== 'string' || raw.length > 64) return null;
  let ip = raw.trim();
  if (net.isIPv4(ip)) return publicV4(ip);
  if (ip.startsWith('[') && ip.endsWith(']')) ip = ip.slice(1, -1);
  const zone = ip.indexOf('%');
  if (zone >= 0) ip = ip.slice(0, zone);
  if (!net.isIPv6(ip)) return null;
  const g = v6Groups(ip);
  if (!g) return null;
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return publicV4(`${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`);
  }
  for (const range of V6_NOT_PUBLIC) if (inV6(g, range)) return null;
  return [ip, 6];
}
