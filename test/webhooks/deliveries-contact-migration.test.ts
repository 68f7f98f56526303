// Migration 2026-11-27T0200: the contact of a delivery moves from an index
// on its body's expression into a column of its own. The deliveries the old
// code wrote must still be found by a privacy request (their contact copied
// from the body), erasure notices keep none, and the two indexes whose
// entries each claim and outcome paid for are gone or cheaper.
import { expect } from 'chai';
import { sql } from 'kysely';
import { migrate } from '../../src/db/database.ts';
import { deliveriesAbout } from '../../src/webhooks/person-deliveries.repository.ts';
import { databaseAtMigration, type OldSchemaDatabase } from '../support/old-schema.ts';
import { testOrgId } from '../support/org-id.ts';

describe('webhooks: deliveries written before the contact had a column of its own', () => {
  let old: OldSchemaDatabase;

  before(async () => {
    // the schema as the old code left it
    old = await databaseAtMigration('contactcol', '2026-11-27T0100_refuse_function', 2);
    // what the old code wrote: the contact only in the body
    await sql`
      INSERT INTO deliveries (org_id, integration_id, kind, body, status)
      VALUES (7, 1, 'event', '{"medium":"event","contact":"ann@example.com","type":"EMAIL"}', 'delivered'),
             (7, 1, 'matched', '{"medium":"contact","contact":"ann@example.com","type":"EMAIL"}', 'pending'),
             (7, 1, 'event', '{"medium":"event","contact":"bob@example.com","type":"EMAIL"}', 'failed'),
             (8, 2, 'event', '{"medium":"event","contact":"ann@example.com","type":"EMAIL"}', 'delivered'),
             (7, 1, 'erased', '{"medium":"contactErased","contact":"ann@example.com","type":"EMAIL"}', 'pending')
    `.execute(old.handle.db);
  });

  after(() => old.drop());

  it('copies each contact from its body, finds them by it, and keeps none for erasure notices', async () => {
    await migrate(old.handle.db);
    const rows = await sql<{ kind: string; contact: string | null }>`SELECT kind, contact FROM deliveries ORDER BY id`.execute(old.handle.db);
    expect(rows.rows).to.deep.equal([
      { kind: 'event', contact: 'ann@example.com' },
      { kind: 'matched', contact: 'ann@example.com' },
      { kind: 'event', contact: 'bob@example.com' },
      { kind: 'event', contact: 'ann@example.com' },
      { kind: 'erased', contact: null },
    ]);
    // a privacy request of organisation 7 about ann finds her two, not bob's, not organisation 8's, not the notice
    const found = await deliveriesAbout(old.handle.db, testOrgId(7), ['ann@example.com'], 0, 100);
    expect(found.map((d) => d.kind)).to.deep.equal(['event', 'matched']);
    const indexes = await sql<{ name: string; def: string }>`
      SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS def FROM pg_index WHERE indrelid = 'deliveries'::regclass ORDER BY 1
    `.execute(old.handle.db);
    const names = indexes.rows.map((r) => r.name);
    expect(names, 'the primary key read backwards lists the deliveries newest first').to.not.include('deliveries_org');
    const contact = indexes.rows.find((r) => r.name === 'deliveries_contact');
    expect(contact?.def, 'on the column, not on the body').to.match(/\(org_id, contact\)$/);
  });
});
