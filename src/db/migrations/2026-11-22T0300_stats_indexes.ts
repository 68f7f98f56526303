// Organisation statistics (getOrganisationStats): contacts linked in a time
// window are counted from this index alone (index-only scan), instead of
// every link the organisation ever made.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE INDEX visitor_contacts_linked ON visitor_contacts (org_id, linked_at, contact_id);
  `.execute(db);
}
