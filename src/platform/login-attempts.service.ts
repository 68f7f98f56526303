// Failed password checks, counted the same wherever a password is checked
// (login, and the password change of a signed-in account): per (email,
// client address) (config.loginRateLimit, 10 per 15 minutes) and per client
// address whatever the emails (config.loginAddressRateLimit, 30 per 15
// minutes). Never per email alone, so failures from one address never lock
// the account's owner out at another. The address is the canonical key of the
// client's address (an IPv6 address by its /64: src/http/client-address.ts).
import type { Deps } from '../deps.ts';
import { clientAddressKey } from '../http/client-address.ts';
import { areaError } from '../http/errors.ts';
import { addressKey, countAttempt, deleteExpired, emailAddressKey, forgiveAttempt } from './login-failures.repository.ts';

/**
 * Counts a password check of the account with this (normalised) email from
 * this client before it is made, so a burst of parallel guesses is limited
 * too; throws 429 past a limit. Returns what a success calls: its attempt is
 * forgiven and the email's count from that address starts over.
 */
export async function countPasswordCheck(deps: Pick<Deps, 'db' | 'config'>, emailKey: string, ip: string): Promise<() => Promise<void>> {
  const { db, config } = deps;
  const address = clientAddressKey(ip);
  const limits = [
    { key: emailAddressKey(emailKey, address), limit: config.loginRateLimit },
    { key: addressKey(address), limit: config.loginAddressRateLimit },
  ].filter((l): l is { key: string; limit: NonNullable<typeof l.limit> } => l.limit !== undefined);
  if (limits.length === 0) return () => Promise.resolve();
  const counters = await countAttempt(
    db,
    limits.map((l) => ({ key: l.key, windowMs: l.limit.windowMs })),
  );
  const over = counters.filter((c) => c.failures > limits.find((l) => l.key === c.key)!.limit.limit);
  if (over.length > 0) {
    const retryAfter = Math.max(...over.map((c) => c.retryAfter));
    throw areaError('platform', 'rate_limited', 'Too many failed login attempts. Try again later.', {
      headers: { 'Retry-After': String(retryAfter) },
    });
  }
  if (Math.random() < 0.01) await deleteExpired(db, Math.max(...limits.map((l) => l.limit.windowMs)));
  return () => forgiveAttempt(db, emailAddressKey(emailKey, address), config.loginAddressRateLimit ? [addressKey(address)] : []);
}
