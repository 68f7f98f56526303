// The erasure notice (contactErased, README "Privacy"): sent for each contact
// Trackway erased (an erase request, or visitor retention), so that the
// receiver deletes its copy. Once delivered or given up, the stored copy is
// redacted (redactedErasedPayload): the outbox keeps no contact of an erased
// person.
import type { Schemas } from '../../http/types.ts';
import { utcDay } from './contact-matched.payload.ts';
import type { OrgId } from '../../db/tenancy.ts';

export type ContactErased = Schemas['ContactErasedNotification'];
export type RedactedErased = Schemas['RedactedErasedNotification'];

export interface ContactErasedInput {
  orgId: OrgId;
  contact: string;
  type: 'EMAIL' | 'PHONE';
  /** when the contact was erased */
  at: Date;
}

export function contactErasedPayload(input: ContactErasedInput): ContactErased {
  return { medium: 'erased', contact: input.contact, type: input.type, org_id: String(input.orgId), date: utcDay(input.at) };
}

/** The notice as kept after it was delivered or given up: everything but the contact. */
export function redactedErasedPayload(sent: ContactErased): RedactedErased {
  return { medium: 'erased', type: sent.type, org_id: sent.org_id, date: sent.date, redacted: true };
}
