// One canonical address per client (issue 22, point 3; README "Security").
// Every limit key and every stored address is made from the canonical text
// of the client's IP address, whatever spelling reached us:
//
// - IPv4 in dotted decimal without leading zeros (`198.51.100.099` is
//   `198.51.100.99`), without a port (`198.51.100.99:80`);
// - IPv6 as RFC 5952 writes it (lower case, no leading zeros, the longest
//   run of zero groups as `::`), without brackets, port or zone
//   (`[2001:DB8:0::1]:443`, `fe80::1%eth0`);
// - an IPv4-mapped IPv6 address (`::ffff:198.51.100.99`, `::ffff:c633:6463`,
//   `0:0:0:0:0:ffff:…`) folded to its IPv4 address.
//
// Anything else (a host name, `unknown`, an integer or hex IPv4, an empty
// entry) is not an address: with TRUST_PROXY the request that carries it in
// X-Forwarded-For is refused with 400 in its area's error body, on the Koa
// path and the fast path alike (resolveClientAddress).
//
// Limit keys: an IPv4 address counts as itself, an IPv6 address by its /64
// (one subscriber or LAN gets a whole /64 and picks any address in it, so
// counting single IPv6 addresses would multiply a client's budget by 2^64);
// identifies of new identities are also counted per /48 (networkKey), the
// prefix a site usually gets, so that 100 /64s of one /48 do not make 100
// fresh identify budgets.
type Parsed = { v: 4; parts: number[] } | { v: 6; groups: number[] };

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function parseV4(text: string): number[] | undefined {
  const m = V4.exec(text);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  return parts.every((p) => p <= 255) ? parts : undefined;
}

function parseV6(text: string): number[] | undefined {
  const addr = text.replace(/%[0-9A-Za-z._~-]+$/, ''); // a zone id says which link, not which host
  if (!/^[0-9A-Fa-f:.]+$/.test(addr) || addr.length > 45) return undefined;
  const halves = addr.split('::');
  if (halves.length > 2) return undefined;
  const read = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    const pieces = s.split(':');
    for (let i = 0; i < pieces.length; i++) {
      const p = pieces[i]!;
      if (i === pieces.length - 1 && p.includes('.')) {
        const v4 = parseV4(p);
        if (!v4) return undefined;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else if (/^[0-9A-Fa-f]{1,4}$/.test(p)) out.push(parseInt(p, 16));
      else return undefined;
    }
    return out;
  };
  const head = read(halves[0]!);
  const tail = halves.length === 2 ? read(halves[1]!) : [];
  if (!head || !tail) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const missing = 8 - head.length - tail.length;
  return missing >= 1 ? [...head, ...Array<number>(missing).fill(0), ...tail] : undefined;
}

function parse(raw: string): Parsed | undefined {
  const text = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(text);
  if (bracketed) {
    const groups = parseV6(bracketed[1]!);
    return groups && fold(groups);
  }
  const v4 = /^([\d.]+)(?::\d{1,5})?$/.exec(text);
  if (v4) {
    const parts = parseV4(v4[1]!);
    return parts && { v: 4, parts };
  }
  const groups = parseV6(text);
  return groups && fold(groups);
}

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is its IPv4 address. */
function fold(groups: number[]): Parsed {
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return { v: 4, parts: [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff] };
  }
  return { v: 6, groups };
}

/** RFC 5952: lower-case hex without leading zeros, the first longest run (two or more) of zero groups as `::`. */
function formatV6(groups: number[]): string {
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** The canonical text of an IP address, or undefined when `raw` is not one (see above). */
export function canonicalIp(raw: string): string | undefined {
  const p = parse(raw);
  if (!p) return undefined;
  return p.v === 4 ? p.parts.join('.') : formatV6(p.groups);
}

/** What a request is refused with (400, its area's body) when TRUST_PROXY is on and X-Forwarded-For does not end with an IP address. */
export const NOT_AN_ADDRESS = 'The last X-Forwarded-For entry is not an IP address (the proxy in front of Trackway must append the client address)';

/**
 * The client's address, canonical: with `trustProxy`, the last
 * X-Forwarded-For entry (the one our own proxy appended; the ones before it
 * are whatever the client sent), else the socket's. Undefined when that
 * entry is not an IP address: the request is then refused.
 */
export function resolveClientAddress(forwardedFor: string | undefined, socketAddress: string | undefined, trustProxy: boolean): string | undefined {
  if (trustProxy && forwardedFor !== undefined && forwardedFor.trim() !== '') {
    return canonicalIp(forwardedFor.slice(forwardedFor.lastIndexOf(',') + 1));
  }
  const socket = socketAddress ?? '';
  return canonicalIp(socket) ?? socket;
}

const prefix = (groups: number[], n: number) =>
  groups
    .slice(0, n)
    .map((g) => g.toString(16))
    .join(':');

/**
 * The keys of the addresses seen lately: the limits ask for one request's key
 * up to four times (checks, then charges), and a client sends many requests.
 * A pure function's results, dropped whole when full (bounded memory).
 */
const recentKeys = new Map<string, string>();
const RECENT_KEYS = 4096;

/** The key a client address is counted under by the rate limits (tracking, login, registration): IPv4 as is, IPv6 by its /64. */
export function clientAddressKey(ip: string): string {
  let key = recentKeys.get(ip);
  if (key !== undefined) return key;
  const p = parse(ip);
  key = !p ? ip.trim().toLowerCase() : p.v === 4 ? p.parts.join('.') : `${prefix(p.groups, 4)}::/64`;
  if (recentKeys.size >= RECENT_KEYS) recentKeys.clear();
  recentKeys.set(ip, key);
  return key;
}

/** The /48 of an IPv6 address (a second, coarser key for new identities); undefined for IPv4. */
export function networkKey(ip: string): string | undefined {
  const p = parse(ip);
  return p?.v === 6 ? `${prefix(p.groups, 3)}::/48` : undefined;
}
