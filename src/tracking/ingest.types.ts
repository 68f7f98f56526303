// What the tracking handlers hand to the ingest path.
import type { Location } from '../db/schema.ts';
import type { TrackedEventName } from '../webhooks/payloads/event-exported.ts';

interface VisitorContext {
  orgId: number;
  roamingId: string;
  coreId: string;
  receivedAt: Date;
  userAgent: string | null;
  location: Location | null;
}

export interface EventItem extends VisitorContext {
  kind: 'event';
  corexId: string | null;
  name: TrackedEventName;
  body: Record<string, unknown>;
}

export interface IdentifyItem extends VisitorContext {
  kind: 'identify';
  payload: { email?: string; phone?: string; name?: string };
}

export type IngestItem = EventItem | IdentifyItem;
