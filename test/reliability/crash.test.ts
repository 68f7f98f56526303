// kill -9 of `trackway serve` under a steady event load with identified
// visitors, then a restart on the same database (docs/design.md "Quality bars"):
// every event that got a 2xx is stored, and every delivery it caused (one
// contact match per visitor, one event export per stored event) reaches the
// receiver at least once; a delivery seen twice comes with the same
// webhook-id and the same body. Prints the figures RELIABILITY.md quotes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Cipher } from '../../src/platform/secrets.service.ts';
import { type TestDatabase, freshDatabase } from '../support/harness.ts';
import { type ReceivedRequest, TestReceiver } from '../support/receiver.ts';
import { createIntegration } from '../support/webhook-fixtures.ts';
import { type ChildServer, freePort, startServe } from './child.ts';
import { startLoad, storedMarkers, until } from './load.ts';

const KEY = Buffer.alloc(32, 11);

// once as a single process, once as a primary with two workers (node:cluster:
// the kill takes the primary, and its workers go with it)
for (const workers of [1, 2])
  describe(`kill -9 of trackway serve --workers ${workers} under load, and a restart on the same database`, function () {
    this.timeout(180_000);
    let database: TestDatabase;
    let receiver: TestReceiver;
    let dataDir: string;
    const children: ChildServer[] = [];
    // from the moment before the kill, new deliveries are held too (see below)
    let holdNew = false;

    before(async () => {
      database = await freshDatabase();
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-crash-'));
      // the first few deliveries are never answered: attempts are in flight when the server dies
      receiver = await TestReceiver.start((_req, i) => (i < 4 || holdNew ? { status: 200, hold: true } : { status: 204, delayMs: i % 7 }));
    });

    after(async () => {
      for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
      await Promise.all(children.map((c) => c.exited()));
      await receiver?.close();
      await database?.drop();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it('loses no acknowledged event and makes every delivery it caused at least once', async () => {
      const db = database.handle.db;
      const token = randomBytes(16).toString('hex');
      const org = await db
        .insertInto('organisations')
        .values({
          token,
          token_hash: createHash('sha256').update(token).digest(),
          domain: 'crash.example',
          domain_key: `crash-${Date.now()}.example`,
          wid: null,
          referer: null,
          created_by: null,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      // lease = httpTimeout 2 s + margin 1 s: an attempt the dead server held is due again 3 s later
      const hook = await createIntegration(db, new Cipher(KEY), org.id, { endpoint: receiver.url, httpTimeout: 2, doEvents: true, doContacts: true });

      const port = await freePort();
      const env = {
        DATABASE_URL: database.url,
        TRACKWAY_DATA_DIR: dataDir,
        TRACKWAY_SECRET_KEY: KEY.toString('base64'),
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,1s,1s,1s,1s,1s',
        WEBHOOK_LEASE_MARGIN: '1s',
        // the load stands for many clients but comes from one address: the tracking limits (on by default) are not what this test is about
        TRACKING_RATE_LIMIT: 'off',
      };
      const first = await startServe(env, port, 60_000, ['--workers', String(workers)]);
      children.push(first);
      const load = startLoad({ base: () => `http://127.0.0.1:${port}`, orgId: org.id, workers: 12, eventsPerVisitor: 12, tag: 'crash', pauseMs: 3 });

      // mid-run: events are being acknowledged and deliveries are in flight
      await until(() => load.acked >= 400 && receiver.requests.length >= 20, 60_000, 'the load to get going');
      // an attempt in flight at the kill whatever the machine's pace (the first held ones may have
      // timed out and been retried by now): hold what arrives from here, kill once one is held
      holdNew = true;
      await until(() => receiver.holding > 0, 30_000, 'a delivery in flight');
      first.proc.kill('SIGKILL');
      await first.exited();
      holdNew = false;
      const ackedAtKill = load.acked;
      const stuck = await db
        .selectFrom('deliveries')
        .select(['id'])
        .where('org_id', '=', org.id)
        .where('status', '=', 'pending')
        .where('attempts_count', '>', 0)
        .execute();

      // the load keeps trying (and failing) while the server is down, then carries on after the restart
      const second = await startServe(env, port, 60_000, ['--workers', String(workers)]);
      children.push(second);
      await until(() => load.acked >= ackedAtKill + 400, 60_000, 'the load to go on after the restart');
      const figures = await load.stop();

      // 1. every acknowledged event is stored
      const stored = await storedMarkers(db, org.id);
      const lost = figures.acknowledged.filter((u) => !stored.has(u));
      expect(lost, `acknowledged but not stored: ${lost.slice(0, 5).join(', ')}`).to.deep.equal([]);

      // 2. the deliveries those events and identifies caused exist: one export per stored event, one match per visitor
      const events = await db.selectFrom('events').select(['core_id']).where('org_id', '=', org.id).execute();
      const rows = await db
        .selectFrom('deliveries')
        .select(['id', 'kind', 'webhook_id', 'body', 'status'])
        .where('org_id', '=', org.id)
        .where('integration_id', '=', hook.id)
        .execute();
      const exportsFor = new Map<string, number>();
      const matchesFor = new Map<string, number>();
      for (const r of rows) {
        const contact = (JSON.parse(r.body) as { contact: string }).contact;
        const m = r.kind === 'event' ? exportsFor : matchesFor;
        m.set(contact, (m.get(contact) ?? 0) + 1);
      }
      const eventsFor = new Map<string, number>();
      for (const e of events) eventsFor.set(e.core_id, (eventsFor.get(e.core_id) ?? 0) + 1);
      const linked = await db.selectFrom('visitor_contacts').select(['core_id']).where('org_id', '=', org.id).execute();
      for (const { core_id } of linked) {
        const email = `${core_id}@visitors.example`;
        expect(matchesFor.get(email), `contact matches of ${core_id}`).to.equal(1);
        expect(exportsFor.get(email) ?? 0, `event exports of ${core_id}`).to.equal(eventsFor.get(core_id) ?? 0);
      }
      for (const coreId of figures.identified.keys())
        expect(
          linked.some((l) => l.core_id === coreId),
          `${coreId} was acknowledged as identified`,
        ).to.equal(true);

      // 3. every one of them reaches the receiver, at least once, under its own webhook-id
      await until(
        async () => {
          const left = await db
            .selectFrom('deliveries')
            .select(['id'])
            .where('org_id', '=', org.id)
            .where('status', '<>', 'delivered')
            .limit(1)
            .execute();
          return left.length === 0;
        },
        90_000,
        'every delivery to be delivered',
      );
      const byId = new Map<string, ReceivedRequest[]>();
      for (const q of receiver.requests) {
        const id = String(q.headers['webhook-id']);
        byId.set(id, [...(byId.get(id) ?? []), q]);
      }
      for (const r of rows) {
        const got = byId.get(r.webhook_id) ?? [];
        expect(got.length, `delivery ${r.id} (${r.webhook_id}) reached the receiver`).to.be.greaterThan(0);
        for (const q of got) expect(q.body, `a duplicate of ${r.webhook_id} carries the same body`).to.equal(r.body);
      }
      const known = new Set(rows.map((r) => r.webhook_id));
      expect(
        [...byId.keys()].filter((id) => !known.has(id)),
        'requests that are no delivery of this database',
      ).to.deep.equal([]);

      // anything but a 2xx or no answer at all (the server was down) would be a bug
      expect(figures.refusals.map((r) => `${r.status} ${r.body}`)).to.deep.equal([]);
      const duplicates = receiver.requests.length - byId.size;
      console.log(
        `      crash figures (--workers ${workers}): events acknowledged ${figures.acknowledged.length} / stored ${stored.size} (sent ${figures.eventsSent}, ${ackedAtKill} acknowledged before the kill); ` +
          `visitors identified ${figures.identified.size}; deliveries due ${rows.length} / made ${byId.size} ` +
          `(${receiver.requests.length} requests received, ${duplicates} duplicates under the same webhook-id; ${stuck.length} claimed by the killed server); ` +
          `requests without an answer while down ${figures.statuses.get(0) ?? 0}`,
      );
      expect(stuck.length, 'the killed server held claims (the test exercised lease expiry)').to.be.greaterThan(0);
    });
  });
