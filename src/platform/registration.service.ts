// Creating a user together with a new organisation: the one rule set shared by
// the platform API's registration (`registerClientUser`) and the analytics host's
// self-service registration (4.8). Both use one email space (users.email_key)
// and one domain space (organisation_domains.domain_key); the unique keys decide
// concurrent registrations, so exactly one of two racing requests wins and the
// other gets its typed error, never a 500.
import { createHash, randomBytes } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { DB } from '../db/schema.ts';
import { domainKey, emailKey } from './normalise.rules.ts';
import { insertMembers, insertOrganisation, type OrganisationRow } from './organisations.repository.ts';
import type { Cipher } from './secrets.service.ts';
import { insertUser } from './users.repository.ts';

/** The email is already registered (case-insensitively). */
export class EmailTaken extends Error {
  constructor() {
    super('Email Already exists');
  }
}

/** An organisation with the same domain (after normalisation) exists. */
export class DomainTaken extends Error {
  constructor() {
    super('Organisation Exists. Cannot assign existing Organisations.');
  }
}

/** Nothing domain-like is left of the domain after normalisation. */
export class InvalidDomain extends Error {
  constructor() {
    super('is not a domain');
  }
}

export interface NewUserWithOrganisation {
  email: string;
  name: string;
  phone: string;
  domain: string;
  organisationName: string;
  /** scrypt hash (see passwords.crypto.ts); null for users who cannot log in */
  passwordHash: string | null;
  /** the platform account registering the user; the organisation is assigned to it too */
  platformUserId?: number;
  /** the organisation's identity secret, sealed (newSealedIdentitySecret); left out, it is made on first need */
  identitySecretEnc?: string;
}

export interface CreatedUser {
  id: number;
  name: string;
  email: string;
  phone: string;
  is_active: boolean;
  is_email_verified: boolean;
  is_phone_verified: boolean;
  is_superuser: boolean;
}

/** A new organisation token: 32 random bytes, base64url. */
export function newOrganisationToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The indexed lookup key of an organisation token. */
export function organisationTokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * An organisation's token in clear: decrypted from `token_enc`, or (a row
 * written by an older version, not yet sealed at start) the clear `token`.
 */
export function organisationToken(cipher: Cipher, row: { token: string | null; token_enc: string | null }): string {
  if (row.token_enc !== null) return cipher.decrypt(row.token_enc);
  return row.token ?? '';
}

/** Our unique indexes, by constraint name. */
function uniqueViolation(err: unknown): Error | undefined {
  const e = err as { code?: string; constraint?: string } | undefined;
  if (e?.code !== '23505') return undefined;
  if (e.constraint === 'users_email_key_key') return new EmailTaken();
  if (e.constraint === 'organisation_domains_pkey') return new DomainTaken();
  return undefined;
}

/**
 * Creates the user (owner) and a new organisation for `domain` inside the
 * caller's transaction, checking the email before the domain. Throws
 * InvalidDomain, EmailTaken or DomainTaken; the caller's transaction must then
 * be rolled back (it is when the error escapes `db.transaction().execute`).
 */
export async function createUserWithOrganisation(
  tx: Transaction<DB>,
  input: NewUserWithOrganisation,
  /** seals the new organisation's token (it is stored encrypted only) */
  cipher: Cipher,
): Promise<{ user: CreatedUser; organisation: OrganisationRow; token: string }> {
  const email = input.email.trim();
  const domain = input.domain.trim();
  const orgKey = domainKey(domain);
  if (!orgKey) throw new InvalidDomain();
  try {
    const user = await insertUser(tx, {
      email,
      emailKey: emailKey(email),
      name: input.name,
      phone: input.phone,
      passwordHash: input.passwordHash,
      platformName: null,
    });
    if (!user) throw new EmailTaken();
    const token = newOrganisationToken();
    const organisation = await insertOrganisation(tx, {
      tokenEnc: cipher.encrypt(token),
      tokenHash: organisationTokenHash(token),
      domain,
      domainKey: orgKey,
      organisationName: input.organisationName,
      createdBy: input.platformUserId ?? user.id,
      identitySecretEnc: input.identitySecretEnc,
    });
    if (!organisation) throw new DomainTaken();
    const members: { userId: number; role: 'owner' | 'platform' }[] = [{ userId: user.id, role: 'owner' }];
    if (input.platformUserId !== undefined && input.platformUserId !== user.id) {
      members.push({ userId: input.platformUserId, role: 'platform' });
    }
    await insertMembers(tx, organisation.id, members);
    return { user, organisation, token };
  } catch (err) {
    throw uniqueViolation(err) ?? err;
  }
}
