// Self-service registration on the analytics host (`registerAnalyticsUser`): a user
// (password hashed with scrypt) and an organisation named `entity`, created in
// one transaction by the same rule set as the platform API's registration, so
// both share one email space and one domain space.
//
// Checks, in order (after the contract has validated the body): registration
// disabled → 403; rate limit per client IP → 429 (every attempt that gets
// this far counts, so the token and the "already registered" answers cannot
// be probed faster than the limit); token → 401; then the registration.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Deps } from '../deps.ts';
import { analyticsError, analyticsFailure } from '../http/errors.ts';
import { createRateLimiter, type RateLimiter } from '../http/rate-limit.ts';
import type { Schemas } from '../http/types.ts';
import { newSealedIdentitySecret } from '../platform/organisation-settings.service.ts';
import { PasswordHashBusy, hashPassword } from '../platform/passwords.crypto.ts';
import type { Cipher } from '../platform/secrets.service.ts';
import { DomainTaken, EmailTaken, InvalidDomain, createUserWithOrganisation } from '../platform/registration.service.ts';
import { invalidInput } from './input.rules.ts';
import { clientAddressKey } from '../http/client-address.ts';

export interface RegistrationDeps {
  db: Deps['db'];
  organisations: Deps['organisations'];
  /** seals the new organisation's token */
  cipher: Cipher;
  /** scrypt cost of the password hash (config.passwordHashCost) */
  passwordHashCost: number;
  /** sha256 of the configured registration token; undefined = registration disabled */
  tokenHash: Buffer | undefined;
  /** per client IP; undefined = no limit */
  limiter: RateLimiter | undefined;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** What registration needs, built once per app from the configuration. */
export function registrationDeps(deps: Pick<Deps, 'db' | 'organisations' | 'config' | 'cipher'>): RegistrationDeps {
  const { registrationToken, registrationRateLimit } = deps.config;
  return {
    db: deps.db,
    organisations: deps.organisations,
    cipher: deps.cipher,
    passwordHashCost: deps.config.passwordHashCost,
    tokenHash: registrationToken === undefined ? undefined : sha256(registrationToken),
    limiter: registrationRateLimit ? createRateLimiter(registrationRateLimit) : undefined,
  };
}

export interface RegistrationRequest {
  /** the `token` query parameter as received */
  token: unknown;
  /** the client IP (Koa's ctx.ip: canonical, honouring TRUST_PROXY) */
  ip: string;
  body: Schemas['AnalyticsRegisterRequest'];
}

/** Creates the user and the organisation, or throws the analytics host's error. */
export async function registerAnalyticsUser(reg: RegistrationDeps, req: RegistrationRequest): Promise<void> {
  if (!reg.tokenHash) throw analyticsError(403, 'Registration is disabled.');

  if (reg.limiter) {
    const decision = reg.limiter.hit(clientAddressKey(req.ip));
    if (!decision.allowed) {
      const err = analyticsError(429, 'Too many registrations. Try again later.');
      err.headers['Retry-After'] = String(decision.retryAfterSeconds);
      throw err;
    }
  }

  // hash both sides so the comparison takes the same time whatever the lengths
  const given = typeof req.token === 'string' ? req.token : '';
  if (!timingSafeEqual(sha256(given), reg.tokenHash)) {
    throw analyticsError(401, 'Invalid or missing registration token.');
  }

  const { body } = req;
  const email = body.email.trim();

  // scrypt before the transaction, so no connection waits on it
  const passwordHash = await hashPassword(body.password, reg.passwordHashCost).catch((err: unknown) => {
    if (!(err instanceof PasswordHashBusy)) throw err;
    const busy = analyticsFailure(503, 5503, 'Too many registrations at once; retry shortly');
    busy.headers['Retry-After'] = '1';
    throw busy;
  });
  try {
    const created = await reg.db.transaction().execute((tx) =>
      createUserWithOrganisation(
        tx,
        {
          email,
          name: body.first_name,
          phone: '',
          domain: body.domain,
          organisationName: body.entity,
          passwordHash,
          identitySecretEnc: newSealedIdentitySecret(reg.cipher),
        },
        reg.cipher,
      ),
    );
    // the tracker may have asked for this id before it existed (a cached "unknown")
    reg.organisations.invalidate(created.organisation.id);
  } catch (err) {
    if (err instanceof EmailTaken) throw analyticsError(400, `${email} already registered! Please sign in to continue.`);
    if (err instanceof DomainTaken) throw analyticsError(400, 'Org already exists');
    if (err instanceof InvalidDomain) throw invalidInput('/domain', 'is not a domain');
    throw err;
  }
}
