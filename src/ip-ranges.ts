// The special-purpose address ranges (IANA's IPv4 and IPv6 special-purpose
// registries, plus the cloud metadata addresses), in one table for the two
// places that ask: webhook targets in them are refused (webhooks/ssrf.client.ts) and
// client addresses in them have no location (geo/address.rules.ts).
// The first matching label names the range in a refusal.

export interface SpecialRange {
  label: string;
  v4: readonly string[];
  v6: readonly string[];
}

export const SPECIAL_RANGES: readonly SpecialRange[] = [
  { label: 'cloud metadata', v4: ['169.254.169.254/32', '100.100.100.200/32'], v6: ['fd00:ec2::254/128'] },
  { label: 'loopback', v4: ['127.0.0.0/8'], v6: ['::1/128'] },
  // "this network"; IPv6 unspecified and the deprecated IPv4-compatible block
  { label: 'unspecified', v4: ['0.0.0.0/8'], v6: ['::/96'] },
  { label: 'private', v4: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'], v6: ['fc00::/7', 'fec0::/10'] },
  { label: 'link-local', v4: ['169.254.0.0/16'], v6: ['fe80::/10'] },
  { label: 'carrier-grade NAT', v4: ['100.64.0.0/10'], v6: [] },
  { label: 'multicast', v4: ['224.0.0.0/4'], v6: ['ff00::/8'] },
  { label: 'broadcast', v4: ['255.255.255.255/32'], v6: [] },
  {
    label: 'reserved',
    v4: [
      '192.0.0.0/24', // IETF protocol assignments
      '192.0.2.0/24', // documentation (TEST-NET-1)
      '192.88.99.0/24', // 6to4 relay anycast (deprecated)
      '198.18.0.0/15', // benchmarking
      '198.51.100.0/24', // documentation (TEST-NET-2)
      '203.0.113.0/24', // documentation (TEST-NET-3)
      '240.0.0.0/4', // reserved, broadcast
    ],
    v6: [
      '64:ff9b:1::/48', // local-use NAT64
      '100::/64', // discard-only
      '2001::/23', // IETF protocol assignments (Teredo, benchmarking, ORCHID)
      '2001:db8::/32', // documentation
      '3fff::/20', // documentation (RFC 9637)
      '5f00::/16', // segment routing SIDs
    ],
  },
];

/** `a.b.c.d/n` or `x::y/n` as [address, prefix length]. */
export function splitCidr(cidr: string): [string, number] {
  const slash = cidr.indexOf('/');
  return [cidr.slice(0, slash), Number(cidr.slice(slash + 1))];
}
