// The private-address guard for outbound webhooks. The check is made on the
// address actually connected to: got's `dnsLookup` is replaced by a lookup
// that resolves every address of the host and refuses the connection when
// any of them is in a refused range (so a DNS answer cannot be swapped
// between check and connect), and IP-literal URLs, which never reach the
// lookup, are checked in a beforeRequest hook.
import dns from 'node:dns';
import net from 'node:net';
import { SPECIAL_RANGES, splitCidr } from '../ip-ranges.ts';

export const REFUSED_CODE = 'ERR_WEBHOOK_ADDRESS_REFUSED';

export class AddressRefusedError extends Error {
  readonly code = REFUSED_CODE;
  constructor(host: string, address: string, range: string) {
    super(
      `refused: ${host === address ? address : `${host} resolves to ${address}`}, a ${range} address ` +
        '(deliveries to private networks are off; WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows them)',
    );
  }
}

const LISTS = SPECIAL_RANGES.map(({ label, v4, v6 }) => {
  const list = new net.BlockList();
  for (const cidr of v4) list.addSubnet(...splitCidr(cidr), 'ipv4');
  for (const cidr of v6) list.addSubnet(...splitCidr(cidr), 'ipv6');
  return { label, list };
});

/** The IPv4 address inside an IPv4-mapped, IPv4-compatible, NAT64 or 6to4 IPv6 address. */
function embeddedIpv4(v6: string): string | undefined {
  const lower = v6.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  // the same written in hex (what URL parsing produces), and 6to4 (2002:AABB:CCDD::/48)
  const hex = /^(?:::ffff:|64:ff9b::|::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower) ?? /^2002:([0-9a-f]{1,4}):([0-9a-f]{1,4})(?::|$)/.exec(lower);
  if (!hex) return undefined;
  const hi = parseInt(hex[1]!, 16);
  const lo = parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** The label of the refused range holding this IP address, or undefined when it may be connected to. */
export function refusedRange(address: string): string | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = net.isIP(bare);
  if (family === 0) return 'unparsable';
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    if (v4 !== undefined) return refusedRange(v4);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const { label, list } of LISTS) if (list.check(bare, type)) return label;
  return undefined;
}

/** Throws AddressRefusedError when `address` is in a refused range. */
export function checkAddress(host: string, address: string): void {
  const range = refusedRange(address);
  if (range) throw new AddressRefusedError(host, address, range);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for sockets that resolves all addresses of the host and refuses
 * the connection if any is in a refused range.
 */
export function guardedLookup(hostname: string, options: dns.LookupOptions | LookupCallback, callback?: LookupCallback): void {
  const cb = (typeof options === 'function' ? options : callback)!;
  const opts: dns.LookupOptions = typeof options === 'function' ? {} : { ...options };
  dns.lookup(hostname, { family: opts.family ?? 0, hints: opts.hints ?? 0, all: true, verbatim: true }, (err, addresses) => {
    if (err) return cb(err, opts.all ? [] : '');
    try {
      if (addresses.length === 0) throw Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' });
      for (const a of addresses) checkAddress(hostname, a.address);
    } catch (e) {
      return cb(e as NodeJS.ErrnoException, opts.all ? [] : '');
    }
    if (opts.all) return cb(null, addresses);
    const first = addresses[0]!;
    cb(null, first.address, first.family);
  });
}

/** For URLs whose host is an IP literal (never looked up): throws when it is refused. */
export function checkUrlHost(url: URL): void {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host)) checkAddress(host, host);
}
