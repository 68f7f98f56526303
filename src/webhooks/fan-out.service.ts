// Webhooks' side of an ingest batch: turns what the batch commits into
// deliveries, written through the transactional outbox in the batch's own
// transaction (so a delivery exists exactly when its event or identify does).
// Which integrations receive what comes from the target cache, read before
// the batch (forOrganisations: which organisations export events, which are
// notified of contact matches); then, once, from what identity reports
// happened (src/identity/batch.service.ts, screened by the privacy rules),
// deliver builds one payload per notification (webhooks/payloads/*) and
// enqueues them for every integration that receives it. It reads nothing of
// identity and calls nothing back.
import type { Tx, OrgId } from '../db/tenancy.ts';
import { enqueueDeliveries, type NewDelivery } from './outbox.repository.ts';
import { contactMatchedPayload, type VisitorIds } from './payloads/contact-matched.payload.ts';
import { eventExportedPayload, type TrackedEventName } from './payloads/event-exported.payload.ts';
import type { Target, TargetCache } from './targets.service.ts';

export interface ContactRef {
  type: 'EMAIL' | 'PHONE';
  value: string;
}

/** An exported event: the event, its id, the contacts of its person (each `verified` when its link to the event's visitor is). */
export interface EventToExport {
  kind: 'event';
  item: VisitorIds & {
    orgId: OrgId;
    receivedAt: Date;
    name: TrackedEventName;
    body: Record<string, unknown>;
    policy: { allowsUrl(url: string): boolean; exportUnverified: boolean };
  };
  eventId: number;
  contacts: readonly (ContactRef & { verified: boolean })[];
}

/** A contact match: the identify, its visitor, the contacts newly linked, the person's recent activity. */
export interface ContactMatch {
  kind: 'matched';
  item: { orgId: OrgId; receivedAt: Date };
  visitor: VisitorIds;
  linked: readonly (ContactRef & { verified: boolean })[];
  recent: { last_view: string[]; last_addtocart: string | null };
}

/**
 * The fan-out of one batch (a unit of work: made by forOrganisations for the
 * batch, its targets read once, dropped with it; docs/architecture.md "One
 * service shape").
 */
export class FanOut {
  /** organisations with an integration that exports events */
  readonly exportsEvents: ReadonlySet<OrgId>;
  /** organisations with an integration notified of contact matches */
  readonly notifiesContacts: ReadonlySet<OrgId>;

  private constructor(private readonly targets: Map<OrgId, Target[]>) {
    const orgs = [...targets.keys()];
    this.exportsEvents = new Set(orgs.filter((o) => this.targetsOf(o).some((t) => t.doEvents)));
    this.notifiesContacts = new Set(orgs.filter((o) => this.targetsOf(o).some((t) => t.doContacts)));
  }

  /** The fan-out for a batch touching these organisations (their targets read once). */
  static async forOrganisations(cache: TargetCache, orgIds: Iterable<OrgId>): Promise<FanOut> {
    const targets = new Map<OrgId, Target[]>();
    for (const orgId of new Set(orgIds)) targets.set(orgId, await cache.forOrg(orgId));
    return new FanOut(targets);
  }

  /**
   * Writes the deliveries of what the batch did, in its order, into the
   * outbox in the caller's transaction (the dispatcher is woken on commit).
   */
  deliver(tx: Tx, happened: readonly (EventToExport | ContactMatch)[]): Promise<void> {
    const deliveries: NewDelivery[] = [];
    for (const h of happened) {
      if (h.kind === 'event') this.eventExported(deliveries, h);
      else this.contactMatched(deliveries, h);
    }
    return enqueueDeliveries(tx, deliveries);
  }

  /**
   * One event-stream export per contact of the event's person, to every
   * integration that exports events; `verified` when the contact's link to
   * the event's visitor is. Under `export_unverified: false` only those.
   */
  private eventExported(deliveries: NewDelivery[], { item: e, eventId, contacts }: EventToExport): void {
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
      for (const t of exportTo) deliveries.push({ orgId: e.orgId, integrationId: t.id, kind: 'event', body: payload, contact: contact.value });
    }
  }

  /** One contact-match notification per newly linked contact, to every integration notified of them. */
  private contactMatched(deliveries: NewDelivery[], { item: e, visitor, linked, recent }: ContactMatch): void {
    const notify = this.targetsOf(e.orgId).filter((t) => t.doContacts);
    for (const c of linked) {
      const payload = JSON.stringify(
        contactMatchedPayload({
          orgId: e.orgId,
          contact: c.value,
          type: c.type,
          verified: c.verified,
          at: e.receivedAt,
          visitor,
          lastView: recent.last_view,
          lastAddToCart: recent.last_addtocart,
        }),
      );
      for (const t of notify) deliveries.push({ orgId: e.orgId, integrationId: t.id, kind: 'matched', body: payload, contact: c.value });
    }
  }

  private targetsOf(orgId: OrgId): Target[] {
    return this.targets.get(orgId) ?? [];
  }
}
