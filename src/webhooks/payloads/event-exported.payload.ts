// The event-stream export (the contract's `eventExported` webhook, openapi/openapi.yaml): one per event of a visitor that
// resolves to a contact, per contact. The interface's fields come first and
// are unchanged; event_id, occurred_at, source_event, visitor and properties
// are added (issue 15).
import type { Schemas } from '../../http/types.ts';
import { utcDay, type VisitorIds, visitorView } from './contact-matched.payload.ts';
import type { OrgId } from '../../db/tenancy.ts';

export type EventExported = Schemas['EventExportedNotification'];
export type TrackedEventName = Schemas['EventName'];
type EventProperties = Schemas['EventProperties'];

/** the top-level URL fields of the tracking bodies */
const URL_FIELDS = ['page', 'cart_url', 'checkout', 'checkout_url', 'product_url'];

/**
 * The event's body for an export: as sent, but without URLs outside the
 * organisation's allowed domains (docs/design.md "Trust": nothing a browser sends puts
 * a URL from elsewhere into a notification). The event row keeps them.
 */
export function exportProperties(body: Record<string, unknown>, allowsUrl: (url: string) => boolean): EventProperties {
  const keep = (v: unknown) => typeof v === 'string' && allowsUrl(v);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (URL_FIELDS.includes(k)) {
      if (keep(v)) out[k] = v;
    } else if ((k === 'items' || k === 'line_items') && Array.isArray(v)) {
      const field = k === 'items' ? 'product_url' : 'image_url';
      out[k] = v.map((item: Record<string, unknown>) => {
        if (!(field in item) || keep(item[field])) return item;
        const { [field]: _dropped, ...rest } = item;
        return rest;
      });
    } else out[k] = v;
  }
  return out;
}

/** docs/design.md ("Outbound webhooks"): updatecart → addtocart; view and productview → view; the rest keep their names. */
const EXPORT_NAME: Record<TrackedEventName, EventExported['event']> = {
  view: 'view',
  productview: 'view',
  updatecart: 'addtocart',
  buy: 'buy',
  removefromcart: 'removefromcart',
  checkout: 'checkout',
  categoryview: 'categoryview',
};

export interface EventExportInput {
  orgId: OrgId;
  contact: string;
  type: 'EMAIL' | 'PHONE';
  at: Date;
  event: TrackedEventName;
  /** the stored event's id (events.id) */
  eventId: number;
  /** the contact's link to the visitor is verified (a valid hash made or confirmed it) */
  verified: boolean;
  visitor: VisitorIds;
  /** the event's body as the tracker sent it (validated against its schema on the way in) */
  properties: Record<string, unknown>;
  /** the organisation's allowed domains (URLs outside them are left out of properties) */
  allowsUrl: (url: string) => boolean;
}

export function eventExportedPayload(input: EventExportInput): EventExported {
  return {
    medium: 'event',
    contact: input.contact,
    type: input.type,
    date: utcDay(input.at),
    org_id: String(input.orgId),
    event: EXPORT_NAME[input.event],
    event_id: String(input.eventId),
    occurred_at: input.at.toISOString(),
    source_event: input.event,
    visitor: visitorView(input.visitor),
    verified: input.verified,
    properties: exportProperties(input.properties, input.allowsUrl),
  };
}
