// The keyed hash of a privacy subject (an email, a phone or a visitor's
// core_id): what the suppression list and the request records keep instead
// of the subject itself (README "Privacy").
//
// HMAC-SHA256 over `org_id NUL type NUL value`, keyed with a key derived from
// the server's secret key (Cipher.deriveKey, HKDF: never the encryption key
// itself). The value is normalised exactly as identify stores contacts
// (src/identity/normalise.rules.ts), so a hash made from a request and one made
// from an identify of the same person agree. The organisation is part of
// the input: the same email in two organisations gives unrelated hashes, and
// nothing here can be compared across organisations or reversed without the
// server's key.
import { createHmac } from 'node:crypto';
import type { SubjectType } from '../db/schema.ts';
import { type ContactType, normaliseEmail, normalisePhone } from '../identity/normalise.rules.ts';
import type { Cipher } from '../platform/secrets.service.ts';
import type { OrgId } from '../db/tenancy.ts';

export type { SubjectType };

/** A subject, its value normalised (subjectOf). */
export interface Subject {
  type: SubjectType;
  value: string;
}

/** The purpose the hash key is derived for; changing it would orphan every stored hash. */
const PURPOSE = 'trackway privacy subject hash v1';

/** The subject type of a contact type. */
export function subjectTypeOf(type: ContactType): 'email' | 'phone' {
  return type === 'EMAIL' ? 'email' : 'phone';
}

/**
 * A subject's value as identify stores it: an email trimmed and lower-cased,
 * a phone without spaces, dashes, dots and brackets (a leading + kept), a
 * core_id as it is. Undefined when nothing is left (an empty email, a phone
 * of only a `+`).
 */
export function normaliseSubject(type: SubjectType, raw: string): string | undefined {
  const value = type === 'email' ? normaliseEmail(raw) : type === 'phone' ? normalisePhone(raw) : raw;
  if (value === '' || (type === 'phone' && value.replace('+', '') === '')) return undefined;
  return value;
}

/** Keyed hashes of subjects; one per process (deps.subjects), its key derived once. */
export class SubjectHasher {
  private readonly key: Buffer;

  constructor(cipher: Cipher) {
    this.key = cipher.deriveKey(PURPOSE);
  }

  /** The hash of a subject whose value is already normalised (normaliseSubject). */
  hash(orgId: OrgId, subject: Subject): Buffer {
    return createHmac('sha256', this.key).update(`${orgId}\u0000${subject.type}\u0000${subject.value}`, 'utf8').digest();
  }

  /** The hash of a contact as identify stores it (its value normalised): for the tracking path. */
  contact(orgId: OrgId, contact: { type: ContactType; value: string }): Buffer {
    return this.hash(orgId, { type: subjectTypeOf(contact.type), value: contact.value });
  }

  /** The hash of a visitor's core_id: for the tracking path. */
  coreId(orgId: OrgId, coreId: string): Buffer {
    return this.hash(orgId, { type: 'core_id', value: coreId });
  }
}
