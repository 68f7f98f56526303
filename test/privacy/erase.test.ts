// Erasure leaves no trace (README "Privacy"): a person tracked through the
// real API on two devices, identified by email, phone and name, notified to
// real receivers (one echoing every body back, one failing so its
// deliveries stay pending), exported once; then erased. Every table and
// column of the database is scanned for the person's email, phone and name
// before (they are everywhere) and after (nowhere), while another person of
// the same organisation keeps everything. The receiver gets a signed
// contactErased notice per contact, whose stored copy is then redacted.
import { expect } from 'chai';
import { sql } from 'kysely';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { eventually } from '../support/wait.ts';
import { newVisitor, privacyApi, scanDatabase, scanDatabaseWithFigures, tablesOf, tracker, type Visitor } from './helpers.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf } from '../support/client.ts';

interface Shopper {
  email: string;
  phone: string;
  /** the phone as stored (normalised) */
  phoneStored: string;
  name: string;
  devices: [Visitor, Visitor];
}

describe('privacy: erasure', function () {
  this.timeout(120_000);
  let srv: TestServer;
  let account: Account;
  let echo: TestReceiver;
  let failing: TestReceiver;

  before(async () => {
    // failed attempts are retried only after an hour: the failing endpoint's deliveries stay pending
    srv = await startTestServer(
      { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: '1h' },
      { dispatcher: true, privacy: { sweepMs: 100 } },
    );
    account = await newAccount(srv);
    echo = await TestReceiver.start((req) => ({ status: 200, body: req.body }));
    // both echo what they are sent: a delivered attempt's excerpt is kept on its delivery, a failed one's in delivery_attempts
    failing = await TestReceiver.start((req) => ({ status: 503, body: req.body }));
  });
  after(async () => {
    await srv?.stop();
    await echo?.close();
    await failing?.close();
  });

  let phones = 0;
  function shopper(tag: string): Shopper {
    const n = unique(tag);
    const digits = String(1_000_000 + (Date.now() % 8_000_000) + ++phones).slice(-7);
    return {
      email: `${n}@example.com`,
      phone: `+44 20 ${digits.slice(0, 3)} ${digits.slice(3)}`,
      phoneStored: `+4420${digits}`,
      name: `Jane ${n} Doe`,
      devices: [newVisitor(), newVisitor()],
    };
  }

  /** Two devices joined by a corex_id, identified by email (and name) and phone, browsing, carting and buying. */
  async function track(orgId: OrgId, domain: string, s: Shopper, product: number): Promise<void> {
    const t = tracker(srv, orgId);
    const [a, b] = s.devices;
    const corex = unique('cx');
    await t.event(a, 'view', { page: `https://${domain}/` }, corex);
    await t.event(b, 'view', { page: `https://${domain}/` }, corex);
    await t.identify(a, { email: s.email, name: s.name });
    await t.identify(b, { phone: s.phone });
    // URLs that carry the email: it reaches the events, the profile and the product catalogue
    await t.event(a, 'productview', { product_id: product, price: 10, product_url: `https://${domain}/p/${product}?ref=${s.email}` });
    await t.event(b, 'updatecart', { product_id: product, cart_url: `https://${domain}/cart?who=${encodeURIComponent(s.name)}` });
    await t.event(b, 'view', { page: `https://${domain}/account?email=${s.email}` });
  }

  const pendingTo = (orgId: OrgId, integrationId: number) =>
    sql<{ n: number }>`SELECT count(*)::int AS n FROM deliveries WHERE org_id = ${orgId} AND integration_id = ${integrationId} AND status = 'pending'`
      .execute(srv.deps.db)
      .then((r) => r.rows[0]!.n);

  it('removes the person from every table and column, notifies the receivers, and leaves the other person whole', async () => {
    const { id: orgId, domain } = (await newMerchant(srv, account)).organisation;
    const contactsHook = await newWebhook(srv, account, orgId, { endpoint: echo.url });
    // events only, failing: the exports to it wait for a retry an hour away
    const failingHook = await newWebhook(srv, account, orgId, { endpoint: failing.url, do_contacts: false });
    const jane = shopper('jane');
    const other = shopper('joan');
    await track(orgId, domain, jane, 7);
    await track(orgId, domain, other, 8);
    // the echo has had everything (the failing endpoint's deliveries wait, retried an hour later or paused)
    await eventually(async () => ((await pendingTo(orgId, contactsHook.id)) === 0 ? true : undefined), 20_000, 'the echo’s deliveries');
    expect(await pendingTo(orgId, failingHook.id)).to.be.greaterThan(0);

    const api = privacyApi(srv, account, orgId);
    // an earlier export of the person: its result holds her too
    const exported = await api.run({ type: 'export', subject: { phone: jane.phone } });
    expect(exported.status, JSON.stringify(exported)).to.equal('done');
    expect(exported.result!.contacts.map((c) => c.value).sort()).to.deep.equal([jane.email, jane.phoneStored].sort());

    const janeNeedles = [jane.email, jane.phoneStored, jane.phone, jane.name];
    const otherNeedles = [other.email, other.phoneStored, other.name];
    const before = await scanDatabase(srv.deps.db, janeNeedles);
    // the scan is not vacuous: the person is everywhere a shopper's data goes
    expect(tablesOf(before)).to.include.members([
      'contacts',
      'deliveries',
      'delivery_attempts',
      'events',
      'persons',
      'privacy_requests',
      'products',
      'visitors',
    ]);

    const erased = await api.run({ type: 'erase', subject: { email: `  ${jane.email.toUpperCase()} ` }, suppress: true });
    expect(erased.status, JSON.stringify(erased)).to.equal('done');
    expect(erased.counts!.persons).to.equal(1);
    expect(erased.counts!.visitors).to.equal(2);
    expect(erased.counts!.contacts).to.equal(2);
    expect(erased.counts!.events).to.equal(5);
    expect(erased.counts!.deliveries).to.be.greaterThan(4);
    expect(erased.finished_at).to.be.a('string');

    // a signed notice per contact, to the integration notified of contacts only
    const notices = await eventually(() => {
      const got = echo.requests.filter((r) => JSON.parse(r.body).medium === 'erased');
      return got.length >= 2 ? got : undefined;
    }, 20_000);
    const today = new Date().toISOString().slice(0, 10);
    expect(notices.map((n) => JSON.parse(n.body)).sort((x, y) => (x.type < y.type ? -1 : 1))).to.deep.equal([
      { medium: 'erased', contact: jane.email, type: 'EMAIL', org_id: String(orgId), date: today },
      { medium: 'erased', contact: jane.phoneStored, type: 'PHONE', org_id: String(orgId), date: today },
    ]);
    const wh = new Webhook(contactsHook.signing_secret);
    for (const n of notices) expect(() => wh.verify(n.body, n.headers as Record<string, string>)).to.not.throw();
    expect(failing.requests.filter((r) => JSON.parse(r.body).medium === 'erased')).to.deep.equal([]);

    // once delivered, the stored notices keep no contact (the echo's response excerpts neither)
    const redacted = await eventually(async () => {
      const r = await srv.api.get<BodyOf<'listDeliveries'>>(`/v1/rest/${account.platform}/organisations/${orgId}/deliveries?limit=200`, {
        token: account.token,
      });
      const mine = r.body.items.filter((d) => d.kind === 'erased');
      return mine.length === 2 && mine.every((d) => (d.payload as { redacted?: boolean }).redacted === true) ? mine : undefined;
    }, 20_000);
    for (const d of redacted) {
      expect(d.status).to.equal('delivered');
      expect(d.payload).to.deep.equal({ medium: 'erased', type: d.payload.type, org_id: String(orgId), date: today, redacted: true });
      expect(d.attempts[0]!.response_excerpt).to.equal(null);
    }

    // no table, no column holds her email, phone or name
    const after = await scanDatabaseWithFigures(srv.deps.db, janeNeedles);
    expect(after.hits).to.deep.equal([]);
    console.log(
      `      erasure figures: ${after.columns} columns of ${after.tables} tables scanned for ${janeNeedles.length} identifiers: ` +
        `${before.length} places before (in ${tablesOf(before).length} tables), 0 after; counts ${JSON.stringify(erased.counts)}; ` +
        `${notices.length} signed notices delivered, then redacted`,
    );
    // the other person keeps everything
    expect(tablesOf(await scanDatabase(srv.deps.db, otherNeedles))).to.include.members([
      'contacts',
      'deliveries',
      'events',
      'persons',
      'products',
      'visitors',
    ]);
    // reads answer as if she never existed
    for (const v of jane.devices) {
      const r = await srv.api.get(`/v1/rest/${account.platform}/organisations/${orgId}/visitors/${v.core}`, { token: account.token });
      expect(r.status, r.text).to.equal(404);
      const events = await srv.api.get<BodyOf<'listEvents'>>(`/v1/rest/${account.platform}/organisations/${orgId}/events?core_id=${v.core}`, {
        token: account.token,
      });
      expect(events.body.items).to.deep.equal([]);
    }
    for (const v of other.devices) {
      const r = await srv.api.get(`/v1/rest/${account.platform}/organisations/${orgId}/visitors/${v.core}`, { token: account.token });
      expect(r.status).to.equal(200);
    }
    // the earlier export's result went with her; the request records keep the audit trail only
    const again = await api.get(exported.id);
    expect(again.body.result).to.equal(undefined);
    expect(again.body.result_expires_at).to.be.a('string');
    const stored = await srv.deps.db.selectFrom('privacy_requests').selectAll().where('org_id', '=', orgId).execute();
    for (const row of stored) {
      expect(row.subject_enc).to.equal(null);
      expect(row.subject_hash).to.have.length(32);
    }
    const list = await api.suppressions();
    expect(list.body.items).to.deep.equal([{ request_id: erased.id, subject_type: 'email', created_at: erased.created_at }]);
  });

  it('erases in bounded batches: a person with more events than one batch, each step its own short transaction', async () => {
    // before the server connects: its pool's clients bind query when they connect
    const hook = installStatementRecorder();
    const small = await startTestServer({}, { dispatcher: false, privacy: { sweepMs: 100, batch: 25 } });
    try {
      const acct = await newAccount(small);
      const { id: orgId, domain } = (await newMerchant(small, acct)).organisation;
      const t = tracker(small, orgId);
      const v = newVisitor();
      const email = `${unique('bulk')}@example.com`;
      await t.identify(v, { email });
      for (let i = 0; i < 110; i++) await t.event(v, 'view', { page: `https://${domain}/page/${i}` });
      hook.start(small.database.name);
      const done = await privacyApi(small, acct, orgId).run({ type: 'erase', subject: { core_id: v.core } });
      hook.stop();
      expect(done.status).to.equal('done');
      expect(done.counts).to.deep.equal({ persons: 1, visitors: 1, contacts: 1, events: 110, deliveries: 0 });
      const deletes = hook.seen.filter((s) => /^\s*DELETE FROM events\b/i.test(s.text));
      // 110 events in batches of at most 25 (the last finds 10; the visitor's own step then finds none left), each in its own transaction
      expect(deletes.map((d) => d.rows).filter((n) => n > 0)).to.deep.equal([25, 25, 25, 25, 10]);
      expect(new Set(deletes.map((d) => d.tx)).size).to.equal(deletes.length);
      const left = await small.deps.db.selectFrom('events').select('id').where('org_id', '=', orgId).execute();
      expect(left).to.deep.equal([]);
    } finally {
      hook.stop();
      await small.stop();
    }
  });
});

/**
 * Records the statements sent to one test database (once start() names it)
 * with their row counts and a number for the transaction each ran in (BEGIN
 * starts a new one). Install it before the server's pool connects.
 */
function installStatementRecorder() {
  const seen: { text: string; rows: number; tx: number }[] = [];
  let database: string | undefined;
  let txs = 0;
  const txOf = new WeakMap<object, number>();
  const proto = pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: { database?: string }, ...args: unknown[]) {
    const first = args[0] as string | { text?: string };
    const text = typeof first === 'string' ? first : first?.text;
    const result = original.apply(this, args);
    if (database && this.database === database && typeof text === 'string') {
      if (/^\s*begin\b/i.test(text)) txOf.set(this, ++txs);
      const tx = txOf.get(this) ?? 0;
      if (result && typeof (result as Promise<unknown>).then === 'function') {
        void (result as Promise<{ rowCount?: number }>).then(
          (r) => seen.push({ text, rows: r?.rowCount ?? 0, tx }),
          () => {},
        );
      }
    }
    return result;
  };
  return {
    seen,
    start(name: string) {
      database = name;
    },
    stop() {
      database = undefined;
      proto.query = original;
    },
  };
}
