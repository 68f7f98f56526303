// Identity verification (docs/design.md "Trust", like Intercom's): the shop's
// server computes `hash` = lower-case hex HMAC-SHA256 of the normalised email
// (or, with no email, the normalised phone), keyed with the organisation's
// identity secret: its 64 characters as shown, used as the key bytes as they
// are (UTF-8/ASCII, not hex-decoded), which is what `createHmac('sha256',
// secret)` in Node and `hash_hmac('sha256', $email, $secret)` in PHP do.
//
// - A hash that is sent must match, in every mode (403 unverified_identity):
//   a wrong one is a misconfiguration or a forgery, never a fallback.
// - `required`: no valid hash, no identify (403, nothing stored). A phone
//   sent beside a hashed email is not covered by the hash and is dropped.
// - `optional`: without a hash, today's behaviour (unverified links).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { trackingError } from '../http/errors.ts';
import { type ContactType, normaliseEmail, normalisePhone } from './normalise.rules.ts';
import type { OrgId } from '../db/tenancy.ts';

/** A new identity secret: 32 random bytes as 64 lower-case hex characters. */
export function newIdentitySecret(): string {
  return randomBytes(32).toString('hex');
}

/** The HMAC-SHA256 of a normalised contact value, keyed with the secret's characters. */
export function identityDigest(secret: string, value: string): Buffer {
  return createHmac('sha256', secret).update(value, 'utf8').digest();
}

/** What the shop's server sends as `hash` (lower-case hex). */
export function identityHash(secret: string, value: string): string {
  return identityDigest(secret, value).toString('hex');
}

const HEX64 = /^[0-9a-f]{64}$/i;

/** Whether `given` is the hash of `value` under `secret`; compared in constant time. */
export function hashMatches(secret: string, value: string, given: string): boolean {
  if (!HEX64.test(given)) return false;
  return timingSafeEqual(Buffer.from(given, 'hex'), identityDigest(secret, value));
}

export interface IdentifyClaim {
  /** contacts to link, normalised, each marked verified when the hash covers it */
  contacts: { type: ContactType; value: string; verified: boolean }[];
  name: string | null;
  /** the payload carried a valid hash */
  verified: boolean;
}

export interface VerificationPolicy {
  orgId: OrgId;
  identityVerification: 'optional' | 'required';
  identitySecret: string | null;
}

function unverified(message: string) {
  return trackingError(403, 'unverified_identity', message);
}

/**
 * Checks an identify payload against the organisation's policy and says
 * what to link; throws 403 unverified_identity when it must be refused.
 */
export function verifyIdentify(policy: VerificationPolicy, payload: { email?: string; phone?: string; name?: string; hash?: string }): IdentifyClaim {
  const email = payload.email ? normaliseEmail(payload.email) : '';
  const rawPhone = payload.phone ? normalisePhone(payload.phone) : '';
  const phone = rawPhone.replace('+', '') ? rawPhone : '';
  // the hash covers the email, or without one the phone
  const subject: ContactType | null = email ? 'EMAIL' : phone ? 'PHONE' : null;
  const required = policy.identityVerification === 'required';
  let verified = false;
  if (payload.hash !== undefined) {
    if (subject === null) throw unverified('The hash covers the email (or the phone), but the payload has neither');
    const value = subject === 'EMAIL' ? email : phone;
    if (policy.identitySecret === null || !hashMatches(policy.identitySecret, value, payload.hash)) {
      throw unverified(
        `The hash does not match the ${subject === 'EMAIL' ? 'email' : 'phone'} for the identity secret of organisation ${policy.orgId}`,
      );
    }
    verified = true;
  } else if (required) {
    throw unverified(
      `Organisation ${policy.orgId} requires identity verification: send hash, the HMAC-SHA256 of the email (or, without one, the phone) keyed with its identity secret`,
    );
  }
  const contacts: IdentifyClaim['contacts'] = [];
  if (email) contacts.push({ type: 'EMAIL', value: email, verified });
  // under `required`, a phone the hash does not cover is not linked
  if (phone && !(required && subject === 'EMAIL')) contacts.push({ type: 'PHONE', value: phone, verified: verified && subject === 'PHONE' });
  return { contacts, name: payload.name?.trim() || null, verified };
}
