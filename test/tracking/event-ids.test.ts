// The ids of exported events, drawn ahead a block at a time (EventIds,
// src/tracking/events.repository.ts), so that an exporting batch's events
// insert travels with its visitors upsert instead of being a statement of
// its own: no id is handed out twice, however the takes interleave, and an
// export names the id its event was stored with.
import { expect } from 'chai';
import { sql } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import { verifyIdentify } from '../../src/identity/verification.rules.ts';
import { storeBatch } from '../../src/tracking/batch.service.ts';
import { EventIds } from '../../src/tracking/events.repository.ts';
import type { IngestItem } from '../../src/tracking/ingest.types.ts';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { onStatements } from '../support/statements.ts';

describe('tracking: exported events’ ids drawn ahead (EventIds)', () => {
  let srv: TestServer;
  let account: Account;
  let db: Database;
  /** statements sent while `recording` (listened to from before the server's connections exist: each binds its query then) */
  let recording = false;
  const sent: string[] = [];
  let restore = () => {};
  before(async () => {
    restore = onStatements((text) => {
      if (recording) sent.push(text);
    });
    srv = await startTestServer();
    account = await newAccount(srv);
    db = srv.deps.db;
  });
  after(async () => {
    restore();
    await srv.stop();
  });

  /** how many ids the sequence has handed out so far (it is never rewound) */
  async function drawnSoFar(): Promise<number> {
    const { rows } = await sql<{ last: string }>`SELECT (CASE WHEN is_called THEN last_value ELSE 0 END)::text AS last FROM events_id_seq`.execute(
      db,
    );
    return Number(rows[0]!.last);
  }

  it('draws a block at a time and hands each id out once', async () => {
    const ids = new EventIds(5);
    const start = await drawnSoFar();
    const first = await ids.take(db, 3);
    expect(await drawnSoFar()).to.equal(start + 5);
    const second = await ids.take(db, 3);
    // two left of the first block, then a second block
    expect(await drawnSoFar()).to.equal(start + 10);
    const all = [...first, ...second];
    expect(new Set(all).size).to.equal(6);
    for (const id of all) expect(id).to.be.within(start + 1, start + 10);
    // a take larger than a block draws as many as it needs
    const big = await ids.take(db, 12);
    expect(big).to.have.length(12);
    expect(new Set([...all, ...big]).size).to.equal(18);
  });

  it('gives concurrent takes distinct ids', async () => {
    const ids = new EventIds(4);
    const taken = await Promise.all(Array.from({ length: 10 }, () => ids.take(db, 3)));
    const flat = taken.flat();
    expect(flat).to.have.length(30);
    expect(new Set(flat).size).to.equal(30);
  });

  it('an exporting batch inserts its events with its visitors upsert, and each export names its stored event', async () => {
    const { id: org, domain } = (await newMerchant(srv, account)).organisation;
    await newWebhook(srv, account, org, { do_events: true, do_contacts: true });
    const policy = (await srv.deps.organisations.policy(org))!;
    const core = unique('c');
    const base = { orgId: org, roamingId: `r-${core}`, coreId: core, userAgent: null, location: null, policy };
    const identify: IngestItem = {
      ...base,
      receivedAt: new Date(),
      kind: 'identify',
      claim: verifyIdentify(policy, { email: `${core}@example.com` }),
    };
    await storeBatch(srv.deps, db, [identify]);
    const view = (page: string): IngestItem => ({
      ...base,
      receivedAt: new Date(),
      kind: 'event',
      corexId: null,
      name: 'view',
      body: { page: `https://${domain}/${page}` },
    });

    recording = true;
    try {
      await storeBatch(srv.deps, db, [view('a'), view('b')]);
    } finally {
      recording = false;
    }
    const inserts = sent.filter((t) => /insert into events/i.test(t));
    expect(inserts, sent.join('\n---\n')).to.have.length(1);
    expect(inserts[0]).to.match(/insert into visitors/i);

    const stored = await db.selectFrom('events').select(['id', 'body']).where('org_id', '=', org).where('name', '=', 'view').orderBy('id').execute();
    expect(stored.map((e) => (e.body as { page: string }).page)).to.deep.equal([`https://${domain}/a`, `https://${domain}/b`]);
    const exported = await db.selectFrom('deliveries').select('body').where('org_id', '=', org).where('kind', '=', 'event').orderBy('id').execute();
    expect(exported.map((d) => (JSON.parse(d.body) as { event_id: string }).event_id)).to.deep.equal(stored.map((e) => String(e.id)));
  });
});
