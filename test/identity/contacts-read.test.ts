// The contacts of an exported event's person are read on every ingest batch
// with exported events (Stitching's readContacts → contactsOfPersonsSeen).
// The read must find a contact's links through an index on the contact, not
// walk all the organisation's links: with 20,000 links stored it touched
// hundreds of buffers per person before visitor_contacts_contact
// (src/db/migrations/2026-11-26T0700_visitor_contacts_by_contact.ts).
import { expect } from 'chai';
import { sql } from 'kysely';
import { contactsOfPersonsSeen } from '../../src/identity/visitors.repository.ts';
import { freshDatabase, type TestDatabase } from '../support/harness.ts';
import { testOrgId } from '../support/org-id.ts';
import { type PlanNode, buffersOf, explainGeneric, statementRecorder } from '../support/statements.ts';

const LINKS = 20_000;

function indexesOf(node: PlanNode): string[] {
  return [...(node['Index Name'] ? [node['Index Name']] : []), ...(node.Plans ?? []).flatMap(indexesOf)];
}

describe('identity: the contacts of a person are read through their links by contact', () => {
  let database: TestDatabase;
  const org = testOrgId(1);
  let recorder: ReturnType<typeof statementRecorder>;
  before(async () => {
    recorder = statementRecorder();
    database = await freshDatabase();
    const db = database.handle.db;
    // LINKS contacts of LINKS persons, each linked (verified) to its own visitor, in one organisation
    await sql`
      INSERT INTO contacts (org_id, id, type, value, person_id)
      SELECT 1, g, 'EMAIL', 'c' || g || '@read.example', g FROM generate_series(1, ${LINKS}::int) g`.execute(db);
    await sql`
      INSERT INTO visitor_contacts (org_id, core_id, contact_id, linked_at, verified)
      SELECT 1, 'v' || g, g, now() - (g || ' seconds')::interval, true FROM generate_series(1, ${LINKS}::int) g`.execute(db);
    await sql`ANALYZE contacts`.execute(db);
    await sql`ANALYZE visitor_contacts`.execute(db);
  });
  after(async () => {
    recorder.restore();
    await database.drop();
  });

  it('returns the person’s contacts with the visitors that verified them', async () => {
    const rows = await contactsOfPersonsSeen(database.handle.db, org, [7, 12_345]);
    expect(rows).to.deep.equal([
      { person_id: 7, type: 'EMAIL', value: 'c7@read.example', verified_by: ['v7'] },
      { person_id: 12345, type: 'EMAIL', value: 'c12345@read.example', verified_by: ['v12345'] },
    ]);
  });

  it('touches a handful of buffers, not the organisation’s links, and uses visitor_contacts_contact', async () => {
    const read = await recorder.during(() => contactsOfPersonsSeen(database.handle.db, org, [4_321]));
    expect(read).to.have.length(1);
    const plan = await explainGeneric(database.handle.pool, read[0]!);
    expect(buffersOf(plan), JSON.stringify(plan)).to.be.lessThan(40);
    expect(indexesOf(plan)).to.include('visitor_contacts_contact');
  });
});
