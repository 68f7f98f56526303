// A signed-in account changes its own password (changePassword): platform
// accounts and self-registered merchants alike. The current password is
// checked (a wrong one counts as a failed login: login-attempts.service.ts), the new
// one hashed, and the session version moved on in the same statement that
// stores it, so every token issued before stops working; the answer carries
// a fresh token of the new version, so the caller stays signed in.
import type { Deps } from '../deps.ts';
import { platformError } from '../http/errors.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { forgetEmail } from './login-failures.repository.ts';
import { countPasswordCheck } from './login-attempts.service.ts';
import { PasswordHashBusy, hashPassword, verifyPassword } from './passwords.crypto.ts';
import { findUserWithPassword, replacePassword } from './users.repository.ts';
import { busy, userView } from './users.service.ts';

export interface PasswordChangeInput {
  current: string;
  next: string;
  /** the client's address (Koa's ctx.ip, canonical) */
  ip: string;
}

const wrongPassword = () => platformError(401, 4011, 'The current password is wrong.');

async function hashing<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw err instanceof PasswordHashBusy ? busy() : err;
  }
}

export async function changeOwnPassword(
  deps: Pick<Deps, 'db' | 'config' | 'tokens'>,
  principal: Principal,
  input: PasswordChangeInput,
): Promise<{ bearer_token: string; user: Schemas['User'] }> {
  const { db, config } = deps;
  const user = await findUserWithPassword(db, principal.userId);
  // the bearer check found the account a moment ago; gone since: as a revoked token
  if (!user?.password_hash) throw platformError(401, 4010, 'The bearer token is invalid or expired');
  const forgive = await countPasswordCheck(deps, user.email_key, input.ip);
  if (!(await hashing(verifyPassword(input.current, user.password_hash, config.passwordHashCost)))) throw wrongPassword();
  await forgive();
  const hash = await hashing(hashPassword(input.next, config.passwordHashCost));
  // only over the hash just checked: a change made meanwhile (another session, the CLI) wins
  const version = await replacePassword(db, user.id, user.password_hash, hash);
  if (version === undefined) throw wrongPassword();
  await forgetEmail(db, user.email_key);
  const bearer_token = await deps.tokens.sign({ userId: user.id, platform: principal.platform, sessionVersion: version });
  return { bearer_token, user: userView(user) };
}
