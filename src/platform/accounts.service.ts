// Platform accounts: created by the CLI (`trackway platform create`) or the
// bootstrap variables; they log in to the platform API.
import type { Deps } from '../deps.ts';
import { emailKey, validPlatformName } from './normalise.ts';
import { hashPassword } from './passwords.ts';
import { findByEmailKey, insertUser } from './users.repository.ts';

export class AccountError extends Error {}

export interface PlatformAccountInput {
  platform: string;
  email: string;
  password: string;
  name: string;
}

function check(input: PlatformAccountInput): void {
  if (!validPlatformName(input.platform)) {
    throw new AccountError(
      `platform name "${input.platform}" must be 1-63 of a-z, 0-9, _ and - (starting with a letter or digit), and not "integration"`,
    );
  }
  if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(input.email.trim()) || input.email.length > 254) {
    throw new AccountError(`"${input.email}" is not an email address`);
  }
  if (input.password.length < 8 || input.password.length > 1024) {
    throw new AccountError('the password must be 8 to 1024 characters');
  }
}

/** Creates the platform account unless an account with that email exists. */
export async function ensurePlatformAccount(
  deps: Pick<Deps, 'db'>,
  input: PlatformAccountInput,
): Promise<{ created: boolean; userId: number }> {
  check(input);
  const key = emailKey(input.email);
  const existing = await findByEmailKey(deps.db, key);
  if (existing) {
    if (existing.platform_name !== input.platform) {
      throw new AccountError(`${input.email} is already registered${existing.platform_name ? ` on platform "${existing.platform_name}"` : ''}`);
    }
    return { created: false, userId: existing.id };
  }
  const user = await insertUser(deps.db, {
    email: input.email.trim(),
    emailKey: key,
    name: input.name,
    phone: '',
    passwordHash: await hashPassword(input.password),
    platformName: input.platform,
  });
  if (!user) return ensurePlatformAccount(deps, input); // created concurrently
  return { created: true, userId: user.id };
}
