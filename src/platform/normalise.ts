// Normalisation rules shared by every way users and organisations are created.

/** Emails compare case-insensitively, surrounding spaces ignored. */
export function emailKey(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * Organisations compare by domain, case-insensitively, after dropping the
 * scheme, credentials, `www.`, port, path, query and a trailing dot.
 * Returns '' when nothing domain-like is left.
 */
export function domainKey(domain: string): string {
  let d = domain.trim().toLowerCase();
  d = d.replace(/^[a-z][a-z0-9+.-]*:\/\//, '');
  d = d.replace(/^[^/@]*@/, '');
  d = d.split(/[/?#]/, 1)[0] ?? '';
  d = d.replace(/:\d*$/, '');
  d = d.replace(/\.+$/, '');
  d = d.replace(/^www\./, '');
  return d;
}

export const PLATFORM_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export function validPlatformName(name: string): boolean {
  return PLATFORM_NAME.test(name) && name !== 'integration';
}
