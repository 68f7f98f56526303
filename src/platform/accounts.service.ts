// Platform accounts: created by the CLI (`trackway platform create`) or the
// bootstrap variables; they log in to the platform API. The CLI sets their
// passwords, and those of self-registered merchants (`trackway platform
// set-password`), which revokes their tokens.
import type { Config } from '../config.ts';
import type { Deps } from '../deps.ts';
import { forgetEmail } from './login-failures.repository.ts';
import { emailKey, loginPlatformOf, validPlatformName } from './normalise.rules.ts';
import { hashPassword, verifyPassword } from './passwords.crypto.ts';
import { changePassword, findByEmailKey, insertUser } from './users.repository.ts';

export class AccountError extends Error {}

/** What account changes need: the database and (optionally) the configured password-hash cost. */
type AccountDeps = Pick<Deps, 'db'> & { config?: Pick<Config, 'passwordHashCost'> };

function checkPassword(password: string): void {
  if (password.length < 8 || password.length > 1024) {
    throw new AccountError('the password must be 8 to 1024 characters');
  }
}

export interface PlatformAccountInput {
  platform: string;
  email: string;
  password: string;
  name: string;
}

function check(input: PlatformAccountInput): void {
  if (!validPlatformName(input.platform)) {
    throw new AccountError(
      `platform name "${input.platform}" must be 1-63 of a-z, 0-9, _ and - (starting with a letter or digit), and not "integration" or "merchant" (reserved)`,
    );
  }
  if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(input.email.trim()) || input.email.length > 254) {
    throw new AccountError(`"${input.email}" is not an email address`);
  }
  checkPassword(input.password);
}

/**
 * Creates the platform account unless an account with that email exists; an
 * existing one is never changed. `samePassword` tells the caller whether the
 * password given is the existing account's (checked only when asked: it
 * costs a hash).
 */
export async function ensurePlatformAccount(
  deps: AccountDeps,
  input: PlatformAccountInput,
  opts: { checkPassword?: boolean } = {},
): Promise<{ created: boolean; userId: number; samePassword?: boolean }> {
  check(input);
  const key = emailKey(input.email);
  const existing = await findByEmailKey(deps.db, key);
  if (existing) {
    if (existing.platform_name !== input.platform) {
      throw new AccountError(`${input.email} is already registered${existing.platform_name ? ` on platform "${existing.platform_name}"` : ''}`);
    }
    if (!opts.checkPassword) return { created: false, userId: existing.id };
    return {
      created: false,
      userId: existing.id,
      samePassword: await verifyPassword(input.password, existing.password_hash, deps.config?.passwordHashCost),
    };
  }
  const user = await insertUser(deps.db, {
    email: input.email.trim(),
    emailKey: key,
    name: input.name,
    phone: '',
    passwordHash: await hashPassword(input.password, deps.config?.passwordHashCost),
    platformName: input.platform,
  });
  if (!user) return ensurePlatformAccount(deps, input, opts); // created concurrently
  return { created: true, userId: user.id };
}

/**
 * Sets the password of the platform account, or of the self-registered
 * merchant (who signs in under `merchant`), with this email: every bearer
 * token issued before stops working (the session version moves on), and the
 * account's failed-login counters start over. A merchant registered by a
 * platform has no password (its platform manages it) and gets none here.
 */
export async function setPlatformPassword(
  deps: AccountDeps,
  input: { email: string; password: string },
): Promise<{ userId: number; platform: string; merchant: boolean }> {
  checkPassword(input.password);
  const key = emailKey(input.email);
  const user = await findByEmailKey(deps.db, key);
  const unknown = () => new AccountError(`no platform account or merchant has the email ${input.email}`);
  if (!user) throw unknown();
  if (user.platform_name === null && user.password_hash === null) {
    throw new AccountError(`${input.email} is a merchant registered by a platform: it has no password and is managed by its platform`);
  }
  const hash = await hashPassword(input.password, deps.config?.passwordHashCost);
  if ((await changePassword(deps.db, user.id, hash)) === undefined) throw unknown();
  await forgetEmail(deps.db, key);
  return { userId: user.id, platform: loginPlatformOf(user), merchant: user.platform_name === null };
}
