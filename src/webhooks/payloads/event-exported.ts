// The event-stream export (interface.md §6.2): one per event of a visitor that
// resolves to a contact, per contact.
import type { Schemas } from '../../http/types.ts';
import { utcDay } from './contact-matched.ts';

export type EventExported = Schemas['EventExportedNotification'];
export type TrackedEventName = Schemas['EventName'];

/** DESIGN.md: updatecart → addtocart; view and productview → view; the rest keep their names. */
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
  orgId: number;
  contact: string;
  type: 'EMAIL' | 'PHONE';
  at: Date;
  event: TrackedEventName;
}

export function eventExportedPayload(input: EventExportInput): EventExported {
  return {
    medium: 'event',
    contact: input.contact,
    type: input.type,
    date: utcDay(input.at),
    org_id: String(input.orgId),
    event: EXPORT_NAME[input.event],
  };
}
