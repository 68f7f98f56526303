// Platform login (`loginPlatformUser`) and client-user registration (`registerClientUser`).
import type { Deps } from '../deps.ts';
import { areaError, platformError } from '../http/errors.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { countPasswordCheck } from './login-attempts.service.ts';
import { MERCHANT_PLATFORM, emailKey, loginPlatformOf } from './normalise.rules.ts';
import type { OrganisationRow } from './organisations.repository.ts';
import { newSealedIdentitySecret } from './organisation-settings.service.ts';
import { PasswordHashBusy, hashPassword, needsRehash, verifyPassword } from './passwords.crypto.ts';
import { type CreatedUser, DomainTaken, EmailTaken, InvalidDomain, createUserWithOrganisation } from './registration.service.ts';
import { findByEmailKey, upgradePasswordHash } from './users.repository.ts';

/** A user row as the interface's User (2.1): `username` is the email. */
export function userView(u: CreatedUser): Schemas['User'] {
  return {
    id: u.id,
    name: u.name,
    email: u.email,
    username: u.email,
    is_active: u.is_active,
    phone: u.phone,
    is_email_verified: u.is_email_verified,
    is_phone_verified: u.is_phone_verified,
    is_superuser: u.is_superuser,
  };
}

/** The interface's Organisation (2.2): everything but `organisation_name`; `token` is the clear token (organisationToken). */
export function organisationView(o: OrganisationRow, token: string): Schemas['Organisation'] {
  return {
    id: o.id,
    token,
    name: o.name,
    domain: o.domain,
    currency: o.currency,
    country_code: o.country_code,
    is_active: o.is_active,
    logo: o.logo,
    wid: o.wid,
    created_at: o.created_at,
    modified_at: o.modified_at,
    referer: o.referer,
    features_enabled: o.features_enabled,
  };
}

function invalidCredentials() {
  return platformError(401, 4011, 'Invalid login credentials.');
}

export interface LoginInput {
  platform: string;
  email: string;
  password: string;
  ip: string;
}

/** Many logins at once wait for a password-hashing slot; beyond the queue: 503, retry shortly. */
export function busy() {
  return areaError('platform', 'unavailable', 'Too many logins at once; retry shortly', { headers: { 'Retry-After': '1' } });
}

/**
 * Checks the credentials of a platform account of `platform`, or of a
 * self-registered merchant when `platform` is `merchant` (a merchant session). Every failure
 * (unknown email, wrong password, another platform, an account without a
 * password) is the same 401/4011 and costs one scrypt verification.
 *
 * Lockout without denial of service: failed attempts are counted per (email,
 * client address) (config.loginRateLimit, 10 per 15 minutes) and per client
 * address whatever the emails (config.loginAddressRateLimit, 30 per 15
 * minutes: several people may share an address). Nothing is counted per
 * email alone, so failures from one address never lock the account's owner
 * out at another: the right password from another address is always
 * accepted. An IPv6 address counts by its /64.
 *
 * A successful login with a hash weaker than the configured cost re-hashes
 * the password (without revoking tokens).
 */
export async function login(
  deps: Pick<Deps, 'db' | 'config' | 'tokens'>,
  input: LoginInput,
): Promise<{ bearer_token: string; user: Schemas['User'] }> {
  const { db, config } = deps;
  const key = emailKey(input.email);
  const forgive = await countPasswordCheck(deps, key, input.ip);

  const cost = config.passwordHashCost;
  const user = await findByEmailKey(db, key);
  let passwordOk: boolean;
  try {
    passwordOk = await verifyPassword(input.password, user?.password_hash, cost);
  } catch (err) {
    throw err instanceof PasswordHashBusy ? busy() : err;
  }
  // a self-registered merchant (no platform, a password) logs in under `merchant`;
  // a merchant registered by a platform has no password and cannot log in
  if (!user || !passwordOk || loginPlatformOf(user) !== input.platform || !user.is_active) {
    throw invalidCredentials();
  }
  // the email's counter for this address starts over; the address's goes down by this attempt
  await forgive();
  if (needsRehash(user.password_hash, cost)) {
    const stronger = await hashPassword(input.password, cost).catch((err: unknown) => {
      if (err instanceof PasswordHashBusy) return undefined; // next time
      throw err;
    });
    if (stronger) await upgradePasswordHash(db, user.id, user.password_hash!, stronger);
  }
  const bearer_token = await deps.tokens.sign({ userId: user.id, platform: input.platform, sessionVersion: user.session_version });
  return { bearer_token, user: userView(user) };
}

export type RegisterInput = Schemas['RegisterClientUserRequest'];

/** Registers a client user with a new organisation, assigned to the user and to the caller. */
export async function registerClientUser(
  deps: Pick<Deps, 'db' | 'organisations' | 'cipher'>,
  principal: Principal,
  body: RegisterInput,
): Promise<{ user: Schemas['User']; organisation: Schemas['Organisation'] }> {
  if (principal.platform === MERCHANT_PLATFORM) {
    throw platformError(403, 4031, 'A merchant session cannot register merchants; log in with a platform account.');
  }
  try {
    const created = await deps.db.transaction().execute((tx) =>
      createUserWithOrganisation(
        tx,
        {
          email: body.email,
          name: body.name ?? '',
          phone: body.phone ?? '',
          domain: body.domain,
          organisationName: body.organisation_name ?? '',
          passwordHash: null,
          platformUserId: principal.userId,
          identitySecretEnc: newSealedIdentitySecret(deps.cipher),
        },
        deps.cipher,
      ),
    );
    // the tracker may have asked for this id before it existed (a cached "unknown")
    deps.organisations.invalidate(created.organisation.id);
    return { user: userView(created.user), organisation: organisationView(created.organisation, created.token) };
  } catch (err) {
    if (err instanceof EmailTaken) throw platformError(409, 4009, 'Email Already exists');
    if (err instanceof DomainTaken) throw platformError(409, 40010, 'Organisation Exists. Cannot assign existing Organisations.');
    if (err instanceof InvalidDomain) {
      throw platformError(400, 4000, 'Invalid request: /domain is not a domain', [{ path: '/domain', message: 'is not a domain' }]);
    }
    throw err;
  }
}
