// The contact-match notification (the contract's `contactMatched` webhook, openapi/openapi.yaml): sent when an identify
// links a visitor to a contact it was not linked to before. The interface's
// fields are unchanged; verified, matched_at and visitor are added.
import type { Schemas } from '../../http/types.ts';
import type { OrgId } from '../../db/tenancy.ts';

export type ContactMatched = Schemas['ContactMatchedNotification'];

/** The tracker's ids of a visitor; a corex_id of null (or the path's literal `null`) is sent as null. */
export interface VisitorIds {
  coreId: string;
  roamingId: string;
  corexId: string | null;
}

export function visitorView(v: VisitorIds): Schemas['WebhookVisitor'] {
  return { core_id: v.coreId, roaming_id: v.roamingId, corex_id: v.corexId === 'null' ? null : v.corexId };
}

export interface ContactMatchInput {
  orgId: OrgId;
  contact: string;
  type: 'EMAIL' | 'PHONE';
  /** the identify carried a valid hash for this contact (identity verification); false when left out */
  verified?: boolean;
  at: Date;
  /** the visitor the identify was made for */
  visitor: VisitorIds;
  /** product URLs, most recent first; only the first 3 are sent */
  lastView: string[];
  lastAddToCart: string | null;
}

export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

export function contactMatchedPayload(input: ContactMatchInput): ContactMatched {
  const body: ContactMatched = {
    medium: 'matched',
    contact: input.contact,
    type: input.type,
    date: utcDay(input.at),
    org_id: String(input.orgId),
    verified: input.verified === true,
    matched_at: input.at.toISOString(),
    visitor: visitorView(input.visitor),
  };
  // optional fields only when there is data: never null, never empty
  if (input.lastAddToCart) body.last_addtocart = input.lastAddToCart;
  if (input.lastView.length > 0) body.last_view = input.lastView.slice(0, 3);
  return body;
}
