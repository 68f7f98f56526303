// Platform login (interface 4.1) and client-user registration (4.2).
import type { Deps } from '../deps.ts';
import { areaError, platformError } from '../http/errors.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { countAttempt, deleteExpired, forgiveAttempt } from './login-failures.repository.ts';
import { emailKey } from './normalise.ts';
import type { OrganisationRow } from './organisations.repository.ts';
import { newSealedIdentitySecret } from './organisation-settings.service.ts';
import { verifyPassword } from './passwords.ts';
import { type CreatedUser, DomainTaken, EmailTaken, InvalidDomain, createUserWithOrganisation } from './registration.service.ts';
import { findByEmailKey } from './users.repository.ts';

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

/** The interface's Organisation (2.2): everything but `organisation_name`. */
export function organisationView(o: OrganisationRow): Schemas['Organisation'] {
  return {
    id: o.id,
    token: o.token,
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

/**
 * Checks the credentials of a platform account of `platform`. Every failure
 * (unknown email, wrong password, another platform, an account without a
 * password) is the same 401/4011 and costs one scrypt verification. Failed
 * attempts are limited per email and per client IP (config.loginRateLimit).
 */
export async function login(
  deps: Pick<Deps, 'db' | 'config' | 'tokens'>,
  input: LoginInput,
): Promise<{ bearer_token: string; user: Schemas['User'] }> {
  const { db } = deps;
  const limit = deps.config.loginRateLimit;
  const key = emailKey(input.email);
  const emailCounter = `email:${key}`;
  const ipCounter = `ip:${input.ip}`;

  // Count the attempt before checking it, so a burst of parallel guesses is
  // limited too; a success is forgiven below.
  if (limit) {
    const counters = await countAttempt(db, [emailCounter, ipCounter], limit.windowMs);
    const over = counters.filter((c) => c.failures > limit.limit);
    if (over.length > 0) {
      const retryAfter = Math.max(...over.map((c) => c.retryAfter));
      throw areaError('platform', 'rate_limited', 'Too many failed login attempts. Try again later.', {
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    if (Math.random() < 0.01) await deleteExpired(db, limit.windowMs);
  }

  const user = await findByEmailKey(db, key);
  const passwordOk = await verifyPassword(input.password, user?.password_hash);
  if (!user || !passwordOk || user.platform_name !== input.platform || !user.is_active) {
    throw invalidCredentials();
  }
  if (limit) await forgiveAttempt(db, emailCounter, [ipCounter]);
  const bearer_token = await deps.tokens.sign({ userId: user.id, platform: input.platform });
  return { bearer_token, user: userView(user) };
}

export type RegisterInput = Schemas['RegisterClientUserRequest'];

/** Registers a client user with a new organisation, assigned to the user and to the caller. */
export async function registerClientUser(
  deps: Pick<Deps, 'db' | 'organisations' | 'cipher'>,
  principal: Principal,
  body: RegisterInput,
): Promise<{ user: Schemas['User']; organisation: Schemas['Organisation'] }> {
  try {
    const created = await deps.db.transaction().execute((tx) =>
      createUserWithOrganisation(tx, {
        email: body.email,
        name: body.name ?? '',
        phone: body.phone ?? '',
        domain: body.domain,
        organisationName: body.organisation_name ?? '',
        passwordHash: null,
        platformUserId: principal.userId,
        identitySecretEnc: newSealedIdentitySecret(deps.cipher),
      }),
    );
    // the tracker may have asked for this id before it existed (a cached "unknown")
    deps.organisations.invalidate(created.organisation.id);
    return { user: userView(created.user), organisation: organisationView(created.organisation) };
  } catch (err) {
    if (err instanceof EmailTaken) throw platformError(409, 4009, 'Email Already exists');
    if (err instanceof DomainTaken) throw platformError(409, 40010, 'Organisation Exists. Cannot assign existing Organisations.');
    if (err instanceof InvalidDomain) {
      throw platformError(400, 4000, 'Invalid request: body.domain is not a domain', [
        { path: 'body.domain', message: 'is not a domain' },
      ]);
    }
    throw err;
  }
}
