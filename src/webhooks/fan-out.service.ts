// Webhooks' side of an ingest batch: turns what the batch commits into
// deliveries, written through the transactional outbox in the batch's own
// transaction (so a delivery exists exactly when its event or identify does).
// Which integrations receive what comes from the target cache; each kind of
// notification has its own payload builder.
import type { Tx } from '../db/tenancy.ts';
import { enqueueDeliveries, type NewDelivery } from './outbox.repository.ts';
import { contactMatchedPayload, type VisitorIds } from './payloads/contact-matched.ts';
import { eventExportedPayload, type TrackedEventName } from './payloads/event-exported.ts';
import type { Target, TargetCache } from './targets.ts';

export interface ContactRef {
  type: 'EMAIL' | 'PHONE';
  value: string;
}

export class FanOut {
  private readonly deliveries: NewDelivery[] = [];

  private constructor(private readonly targets: Map<number, Target[]>) {}

  /** The fan-out for a batch touching these organisations (their targets read once). */
  static async forOrganisations(cache: TargetCache, orgIds: Iterable<number>): Promise<FanOut> {
    const targets = new Map<number, Target[]>();
    for (const orgId of new Set(orgIds)) targets.set(orgId, await cache.forOrg(orgId));
    return new FanOut(targets);
  }

  /** Whether any integration of the organisation exports events. */
  exportsEvents(orgId: number): boolean {
    return this.targetsOf(orgId).some((t) => t.doEvents);
  }

  /** Whether any integration of the organisation is notified of contact matches. */
  notifiesContacts(orgId: number): boolean {
    return this.targetsOf(orgId).some((t) => t.doContacts);
  }

  /**
   * One event-stream export per contact of the event's person, to every
   * integration that exports events; `verified` when the contact's link to
   * the event's visitor is. Under `export_unverified: false` only those.
   */
  eventExported(
    e: VisitorIds & {
      orgId: number;
      receivedAt: Date;
      name: TrackedEventName;
      body: Record<string, unknown>;
      policy: { allowsUrl(url: string): boolean; exportUnverified: boolean };
    },
    eventId: number,
    contacts: readonly (ContactRef & { verified: boolean })[],
  ): void {
    const exportTo = this.targetsOf(e.orgId).filter((t) => t.doEvents);
    if (exportTo.length === 0) return;
    for (const contact of contacts) {
      if (!contact.verified && !e.policy.exportUnverified) continue;
      const payload = JSON.stringify(
        eventExportedPayload({
          orgId: e.orgId,
          contact: contact.value,
          type: contact.type,
          at: e.receivedAt,
          event: e.name,
          eventId,
          verified: contact.verified,
          visitor: { coreId: e.coreId, roamingId: e.roamingId, corexId: e.corexId },
          properties: e.body,
          allowsUrl: (url) => e.policy.allowsUrl(url),
        }),
      );
      for (const t of exportTo) this.deliveries.push({ orgId: e.orgId, integrationId: t.id, kind: 'event', body: payload });
    }
  }

  /** One contact-match notification per newly linked contact, to every integration notified of them. */
  contactMatched(
    e: { orgId: number; receivedAt: Date; visitor: VisitorIds },
    linked: readonly (ContactRef & { verified: boolean })[],
    recent: { last_view: string[]; last_addtocart: string | null },
  ): void {
    const notify = this.targetsOf(e.orgId).filter((t) => t.doContacts);
    for (const c of linked) {
      const payload = JSON.stringify(
        contactMatchedPayload({
          orgId: e.orgId,
          contact: c.value,
          type: c.type,
          verified: c.verified,
          at: e.receivedAt,
          visitor: e.visitor,
          lastView: recent.last_view,
          lastAddToCart: recent.last_addtocart,
        }),
      );
      for (const t of notify) this.deliveries.push({ orgId: e.orgId, integrationId: t.id, kind: 'matched', body: payload });
    }
  }

  /** Writes the deliveries into the outbox, in the caller's transaction (the dispatcher is woken on commit). */
  enqueue(tx: Tx): Promise<void> {
    return enqueueDeliveries(tx, this.deliveries);
  }

  private targetsOf(orgId: number): Target[] {
    return this.targets.get(orgId) ?? [];
  }
}
