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

/**
 * The reserved platform name under which merchants who registered themselves
 * (analytics host) log in: their accounts have no platform (users.platform_name
 * is null), and their session sees only their own organisation.
 */
export const MERCHANT_PLATFORM = 'merchant';

/** The platform a user logs in under: its platform, or `merchant` for a user without one. */
export function loginPlatformOf(user: { platform_name: string | null }): string {
  return user.platform_name ?? MERCHANT_PLATFORM;
}

export function validPlatformName(name: string): boolean {
  return PLATFORM_NAME.test(name) && name !== 'integration' && name !== MERCHANT_PLATFORM;
}
