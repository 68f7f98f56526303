// Which hosts an organisation's URLs may come from (docs/design.md "Trust"):
// `allowed_domains`, by default the organisation's own domain. A product or
// cart URL outside them is stored with its event but never reaches a
// notification or a visitor read; with `enforce_origin`, a tracking request
// from outside them is refused.
//
// Matching: the URL's host as `new URL` parses it (lower-case, IDN in its
// xn-- form), trailing dot dropped, port ignored, equals an entry or ends
// with `.` + entry. An IP-literal host matches only an identical entry.
// Only http: and https: URLs can match.

/** At most this many entries in allowed_domains. */
export const MAX_ALLOWED_DOMAINS = 50;

const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

const isIpLiteral = (host: string) => IPV4.test(host) || host.startsWith('[');

/** The host of an http(s) URL as matched here, or null when there is none. */
export function urlHost(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return null;
  const host = u.hostname.replace(/\.$/, '');
  return host === '' ? null : host;
}

/** Whether a host (as urlHost returns it) is one of `domains` or under one of them. */
export function hostAllowed(host: string, domains: readonly string[]): boolean {
  if (isIpLiteral(host)) return domains.includes(host);
  for (const d of domains) {
    if (host === d) return true;
    if (!isIpLiteral(d) && host.length > d.length && host.endsWith(d) && host[host.length - d.length - 1] === '.') return true;
  }
  return false;
}

/** A predicate for URLs, for one list of domains (exact matches by a Set). */
export function urlMatcher(domains: readonly string[]): (url: string) => boolean {
  const exact = new Set(domains);
  return (url) => {
    const host = urlHost(url);
    if (host === null) return false;
    if (exact.has(host)) return true;
    return hostAllowed(host, domains);
  };
}

/** The default list: the organisation's own domain (its domain_key, already normalised). */
export function defaultAllowedDomains(domainKey: string): string[] {
  const host = normaliseAllowedDomain(domainKey);
  return typeof host === 'string' ? [host] : [domainKey];
}

/**
 * An entry of allowed_domains as stored (lower-case, no trailing dot, IPv6
 * in brackets), or `{error}` saying why it is not a host name.
 */
export function normaliseAllowedDomain(raw: string): string | { error: string } {
  const entry = raw.trim().toLowerCase().replace(/\.$/, '');
  if (entry === '') return { error: 'is empty' };
  if (/[/?#@\s\\]|^[a-z][a-z0-9+.-]*:\/\//.test(entry)) return { error: 'must be a host name only, without scheme, path or port' };
  // an IPv6 address (two colons at least), with or without brackets
  if (/^\[?[0-9a-f:.]+\]?$/.test(entry) && (entry.match(/:/g) ?? []).length >= 2) {
    const bracketed = entry.startsWith('[') ? entry : `[${entry}]`;
    let host: string;
    try {
      host = new URL(`http://${bracketed}/`).hostname;
    } catch {
      return { error: 'is not a host name or an IP address' };
    }
    return host;
  }
  if (entry.includes(':')) return { error: 'must not carry a port' };
  if (/^[0-9.]+$/.test(entry)) {
    if (!IPV4.test(entry) || entry.split('.').some((o) => Number(o) > 255 || /^0\d/.test(o))) return { error: 'is not a valid IPv4 address' };
    return entry.split('.').map(Number).join('.');
  }
  if (entry.length > 253) return { error: 'is longer than 253 characters' };
  const labels = entry.split('.');
  if (!labels.every((l) => LABEL.test(l))) {
    return { error: 'is not a host name (letters, digits, hyphens and dots; internationalised names in their xn-- form)' };
  }
  if (labels.length === 1 && entry !== 'localhost') return { error: 'must be a full host name such as shop.example.com' };
  if (/^\d+$/.test(labels[labels.length - 1]!)) return { error: 'is not a host name (its last label is numeric)' };
  return entry;
}
