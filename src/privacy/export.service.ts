// An export (README "Privacy"): one JSON document of everything stored
// about one person of one organisation, read in one consistent snapshot
// (REPEATABLE READ, read only: nothing is locked, ingest goes on). The
// person is the one the subject resolved to, with every visitor joined to it;
// nobody else's rows are read (every statement names the person's own
// visitors, contacts or persons).
import type { Database } from '../db/database.ts';
import type { PrivacyCounts, SubjectType } from '../db/schema.ts';
import type { Schemas } from '../http/types.ts';
import { contactsOfPersons, type PersonVisitor, profilesOfPersons, visitorsOfPersons } from '../identity/person-records.service.ts';
import { eventsOfVisitors, type VisitorEvent } from '../tracking/visitor-events.service.ts';
import { deliveriesAbout, type PersonDelivery } from '../webhooks/erased-notices.service.ts';
import type { OrgId } from '../db/tenancy.ts';

export type PrivacyExport = Schemas['PrivacyExport'];

/** How long a finished export's result is kept (then deleted; at once if the person is erased). */
export const EXPORT_KEEP_MS = 7 * 86_400_000;

const PAGE = 5000;

async function allPages<T>(page: (after: T | undefined) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (let after: T | undefined; ;) {
    const rows = await page(after);
    out.push(...rows);
    if (rows.length < PAGE) return out;
    after = rows[rows.length - 1];
  }
}

function visitorView(v: PersonVisitor): Schemas['PrivacyExportVisitor'] {
  return {
    core_id: v.core_id,
    roaming_id: v.roaming_id,
    corex_id: v.corex_id,
    name: v.name,
    first_seen: v.first_seen.toISOString(),
    last_seen: v.last_seen.toISOString(),
    user_agent: v.user_agent,
    location: v.location,
  };
}

function eventView(e: VisitorEvent): Schemas['TrackedEvent'] {
  return {
    id: String(e.id),
    name: e.name as Schemas['TrackedEvent']['name'],
    core_id: e.core_id,
    roaming_id: e.roaming_id,
    corex_id: e.corex_id,
    received_at: e.received_at.toISOString(),
    body: e.body,
  };
}

function notificationView(d: PersonDelivery): Schemas['PrivacyExportNotification'] {
  return {
    id: d.id,
    integration_id: d.integration_id,
    kind: d.kind as Schemas['PrivacyExportNotification']['kind'],
    status: d.status,
    created_at: d.created_at.toISOString(),
    delivered_at: d.delivered_at ? d.delivered_at.toISOString() : null,
    payload: JSON.parse(d.body) as Schemas['PrivacyExportNotification']['payload'],
  };
}

/** The document for the persons a subject resolved to (none: `found` false), and what it holds. */
export async function buildExport(
  db: Database,
  orgId: OrgId,
  subjectType: SubjectType,
  persons: readonly number[],
  at: Date,
): Promise<{ document: PrivacyExport; counts: PrivacyCounts }> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (tx) => {
      const contacts = await contactsOfPersons(tx, orgId, persons);
      const visitors = await allPages<PersonVisitor>((after) => visitorsOfPersons(tx, orgId, persons, PAGE, after?.core_id));
      const cores = visitors.map((v) => v.core_id);
      const [profile] = await profilesOfPersons(tx, orgId, persons);
      const events = await allPages<VisitorEvent>((after) => eventsOfVisitors(tx, orgId, cores, after && [after.received_at, after.id], PAGE));
      const values = contacts.map((c) => c.value);
      const deliveries = await allPages<PersonDelivery>((after) => deliveriesAbout(tx, orgId, values, after?.id ?? 0, PAGE));
      const document: PrivacyExport = {
        org_id: orgId,
        subject_type: subjectType,
        generated_at: at.toISOString(),
        found: persons.length > 0 && (visitors.length > 0 || contacts.length > 0),
        contacts: contacts.map((c) => ({ type: c.type, value: c.value, verified: c.verified, created_at: c.created_at.toISOString() })),
        visitors: visitors.map(visitorView),
        profile: profile
          ? {
              last_view: profile.last_view.map((v) => ({ url: v.url, at: new Date(v.at).toISOString() })),
              last_cart: profile.last_cart_at
                ? { product_id: profile.last_cart_product_id, url: profile.last_cart_url, at: profile.last_cart_at.toISOString() }
                : null,
            }
          : null,
        events: events.map(eventView),
        notifications: deliveries.map(notificationView),
      };
      const counts: PrivacyCounts = {
        persons: document.found ? persons.length : 0,
        visitors: visitors.length,
        contacts: contacts.length,
        events: events.length,
        deliveries: deliveries.length,
      };
      return { document, counts };
    });
}
