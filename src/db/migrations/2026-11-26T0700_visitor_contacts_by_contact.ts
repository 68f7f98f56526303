// visitor_contacts by contact (issue 24). Four reads find a contact's links by
// (org_id, contact_id): the contacts of an exported event's person with the
// visitors that verified each (contactsOfPersonsSeen, on every ingest batch
// with exported events), the contacts of persons (contactsOfPersons), a
// person's export and a person's erasure. The table's keys begin with core_id
// (the primary key) or linked_at (visitor_contacts_linked), so each of them
// walked the organisation's whole linked_at index: 534 buffers, 1.3–2.4 ms per
// read at 1,000 contacts (auto_explain during `npm run bench -- --only dispatch`
// on PostgreSQL 15), growing with every contact the organisation gains
// (docs/profiles/visitors-read-back.md).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX IF NOT EXISTS visitor_contacts_contact ON visitor_contacts (org_id, contact_id)`.execute(db);
}
