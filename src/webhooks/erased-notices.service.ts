// Webhooks' side of an erasure (README "Privacy"): a contactErased notice per
// erased contact to every active integration with do_contacts, written in
// the transaction that deletes the contacts (so a contact is gone exactly
// when its notices exist), and the redaction of notices that are finished
// (delivered, failed, or cancelled with their integration): their stored
// copy keeps no contact.
import type { Database } from '../db/database.ts';
import type { Tx, OrgId } from '../db/tenancy.ts';
import { listActiveTargets } from './integrations.repository.ts';
import { type ContactErased, contactErasedPayload, redactedErasedPayload } from './payloads/contact-erased.payload.ts';
import { enqueueErasedNotices, organisationsWithUnredactedNotices, redactNotices, unredactedNotices } from './person-deliveries.repository.ts';

export { deleteDeliveriesAbout, deliveriesAbout, type PersonDelivery } from './person-deliveries.repository.ts';

/**
 * Queues a contactErased notice for each contact to every active
 * integration notified of contacts (read now, not from the cache: the
 * notice must reach every receiver that exists at this moment). Returns how
 * many deliveries it wrote.
 */
export async function noticeErasedContacts(
  tx: Tx,
  orgId: OrgId,
  contacts: readonly { type: 'EMAIL' | 'PHONE'; value: string }[],
  at: Date,
): Promise<number> {
  if (contacts.length === 0) return 0;
  const targets = (await listActiveTargets(tx, orgId)).filter((t) => t.do_contacts);
  const rows = contacts.flatMap((c) => {
    const body = JSON.stringify(contactErasedPayload({ orgId, contact: c.value, type: c.type, at }));
    return targets.map((t) => ({ integrationId: t.id, body }));
  });
  await enqueueErasedNotices(tx, orgId, rows);
  return rows.length;
}

const REDACT_BATCH = 500;

/** Redacts the organisation's finished notices that still carry their contact; how many. */
export async function redactFinishedNotices(db: Database, orgId: OrgId): Promise<number> {
  let done = 0;
  for (;;) {
    const rows = await unredactedNotices(db, orgId, REDACT_BATCH);
    if (rows.length === 0) return done;
    const redacted = rows.map((r) => ({ id: r.id, body: JSON.stringify(redactedErasedPayload(JSON.parse(r.body) as ContactErased)) }));
    // the body and the attempts' excerpts together
    done += await db.transaction().execute((tx) => redactNotices(tx, orgId, redacted));
    if (rows.length < REDACT_BATCH) return done;
  }
}

/** The redaction for every organisation that needs it (the privacy runner's sweep); how many notices. */
export async function redactAllFinishedNotices(db: Database): Promise<number> {
  let done = 0;
  for (const orgId of await organisationsWithUnredactedNotices(db, 100)) done += await redactFinishedNotices(db, orgId);
  return done;
}
