// The identifies of a batch that meet no other identify (their visitor and
// contacts are their own) are written together, one statement per
// organisation (Stitching.identifyTogether); the others one by one, in
// order. The same items sent as one batch and one by one leave the same
// persons, contacts, links, names and deliveries (contact matches with their
// recent activity, event exports with the contacts known at their turn).
import { expect } from 'chai';
import pg from 'pg';
import { verifyIdentify } from '../../src/identity/verification.rules.ts';
import { isMergeRefusal, upsertVisitorsIdentifying } from '../../src/identity/identify-upsert.repository.ts';
import { visitorTouches } from '../../src/identity/stitching.service.ts';
import { prepareBatch, processBatch, storeBatch } from '../../src/tracking/batch.service.ts';
import type { IngestItem } from '../../src/tracking/ingest.types.ts';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import { notificationsHeard, startTestServer, type TestServer } from '../support/harness.ts';
import { onStatements } from '../support/statements.ts';

type Step = { visitor: string } & (
  { event: 'productview' | 'view'; product?: number; corex?: string } | { identify: { email?: string; phone?: string; name?: string } }
);

describe('identity: identifies written together give what one by one gives', () => {
  let srv: TestServer;
  let account: Account;
  // one time for every item: the payloads carry it, and both runs must give the same
  const at = new Date();
  let recording = false;
  let inserts = 0;
  let contactReads = 0;
  /** every statement sent while recording, with its client */
  let sent: { client: pg.Client; text: string }[] = [];
  const texts = () => sent.map((x) => x.text);
  let restore = () => {};
  before(async () => {
    restore = onStatements((text, client) => {
      if (!recording) return;
      sent.push({ client, text });
      if (/insert into contacts/i.test(text)) inserts++;
      if (/^(\/\*prepare\*\/\s*)?select\b[\s\S]*\bfrom "?contacts"?\s/i.test(text)) contactReads++;
    });
    srv = await startTestServer();
    account = await newAccount(srv);
  });
  after(async () => {
    restore();
    await srv.stop();
  });

  async function shop() {
    const { id: org, domain } = (await newMerchant(srv, account)).organisation;
    await newWebhook(srv, account, org, { do_events: true, do_contacts: true });
    const policy = (await srv.deps.organisations.policy(org))!;
    return { org, domain, policy };
  }

  function items(s: Awaited<ReturnType<typeof shop>>, run: string, steps: Step[]): IngestItem[] {
    return steps.map((st): IngestItem => {
      const base = {
        orgId: s.org,
        roamingId: `r-${st.visitor}`,
        coreId: `${run}-${st.visitor}`,
        receivedAt: at,
        userAgent: null,
        location: null,
        policy: s.policy,
      };
      if ('identify' in st) return { ...base, kind: 'identify', claim: verifyIdentify(s.policy, st.identify) };
      const body =
        st.event === 'productview'
          ? { product_id: st.product, price: 1, product_url: `https://${s.domain}/p/${st.product}` }
          : { page: `https://${s.domain}/` };
      return { ...base, kind: 'event', corexId: st.corex === undefined ? null : `${run}-${st.corex}`, name: st.event, body };
    });
  }

  const batch = (its: IngestItem[]) => srv.deps.db.transaction().execute(async (tx) => processBatch(tx, await prepareBatch(srv.deps, tx, its)));

  /** What a batch leaves behind, with the organisation's own ids and domain taken out. */
  async function state(s: Awaited<ReturnType<typeof shop>>) {
    const db = srv.deps.db;
    const visitors = await db
      .selectFrom('visitors')
      .select(['core_id', 'person_id', 'name'])
      .where('org_id', '=', s.org)
      .orderBy('core_id')
      .execute();
    const groupOf = (person: number) => visitors.filter((v) => v.person_id === person).map((v) => v.core_id);
    const contacts = await db
      .selectFrom('contacts')
      .select(['id', 'type', 'value', 'person_id'])
      .where('org_id', '=', s.org)
      .orderBy('value')
      .execute();
    const links = await db.selectFrom('visitor_contacts').select(['core_id', 'contact_id', 'verified']).where('org_id', '=', s.org).execute();
    const deliveries = await db.selectFrom('deliveries').select(['kind', 'body']).where('org_id', '=', s.org).orderBy('id').execute();
    const valueOf = new Map(contacts.map((c) => [c.id, `${c.type}:${c.value}`]));
    return {
      persons: [...new Set(visitors.map((v) => v.person_id))].map(groupOf).sort(),
      names: visitors.map((v) => [v.core_id, v.name]),
      contacts: contacts.map((c) => [c.type, c.value, groupOf(c.person_id)]),
      links: links.map((l) => [l.core_id, valueOf.get(l.contact_id), l.verified]).sort(),
      deliveries: deliveries.map((d) => {
        const { org_id: _o, event_id: _e, ...body } = JSON.parse(d.body.split(s.domain).join('shop')) as Record<string, unknown>;
        return [d.kind, body];
      }),
    };
  }

  /** Statements inserting contacts sent while `fn` runs (counted by the hook on pg's client installed in before()). */
  async function contactInserts(fn: () => Promise<void>): Promise<number> {
    inserts = 0;
    sent = [];
    recording = true;
    try {
      await fn();
    } finally {
      recording = false;
    }
    return inserts;
  }

  it('a batch mixing identifies that meet and that do not', async () => {
    const run = unique('t');
    const before: Step[] = [
      { visitor: 'k', identify: { email: 'known@example.com' } },
      { visitor: 'k', event: 'productview', product: 9 },
    ];
    const steps: Step[] = [
      { visitor: 'v1', event: 'productview', product: 1 },
      // an event export before v7's identify: v7's contact is not known yet
      { visitor: 'v7', event: 'view' },
      { visitor: 'v1', identify: { email: 'a@example.com', name: 'A' } },
      { visitor: 'v2', identify: { email: 'b@example.com', phone: '+44 20 7946 0000' } },
      // a known contact: v3 joins k's person at its turn
      { visitor: 'v3', identify: { email: 'known@example.com' } },
      { visitor: 'k', event: 'view' },
      { visitor: 'v7', identify: { email: 'c@example.com' } },
      { visitor: 'v7', event: 'view' },
      // these two meet (one contact): one by one, in order
      { visitor: 'v4', identify: { email: 'shared@example.com' } },
      { visitor: 'v5', identify: { email: 'shared@example.com', name: 'Five' } },
      { visitor: 'v5', event: 'view' },
      { visitor: 'v6', identify: { name: 'Six' } },
      // one visitor twice: one by one
      { visitor: 'v8', identify: { email: 'x@example.com', name: 'Eight' } },
      { visitor: 'v8', identify: { email: 'y@example.com' } },
      { visitor: 'v2', event: 'productview', product: 2 },
    ];
    const together = await shop();
    const alone = await shop();
    for (const s of [together, alone]) for (const it of items(s, run, before)) await batch([it]);

    // v1, v2, v3, v7 in one statement; v4, v5 and v8 (twice) one each; v6 (a name only) none
    expect(await contactInserts(() => batch(items(together, run, steps)))).to.equal(5);
    for (const it of items(alone, run, steps)) await batch([it]);

    const [got, want] = [await state(together), await state(alone)];
    expect(got).to.deep.equal(want);
    // and what one by one gives is what the rules say
    expect(got.persons).to.deep.include([`${run}-k`, `${run}-v3`]);
    expect(got.persons).to.deep.include([`${run}-v4`, `${run}-v5`]);
    expect(got.names).to.deep.include([`${run}-v6`, 'Six']);
    // a later identify without a name keeps the name an earlier one gave
    expect(got.names).to.deep.include([`${run}-v8`, 'Eight']);
    const exports = got.deliveries.filter(([kind]) => kind === 'event').map(([, b]) => b as { contact: string; visitor: { core_id: string } });
    expect(exports.filter((b) => b.visitor.core_id === `${run}-v7`).map((b) => b.contact)).to.deep.equal(['c@example.com']);
    const matched = got.deliveries.filter(([kind]) => kind === 'matched').map(([, b]) => b as { contact: string; last_view?: string[] });
    expect(matched.find((b) => b.contact === 'a@example.com')?.last_view).to.deep.equal(['https://shop/p/1']);
    expect(matched.map((b) => b.contact)).to.include.members(['a@example.com', 'b@example.com', 'known@example.com', 'c@example.com']);
  });

  it('reads the contacts of the exported events’ persons in one statement, again only for a person an identify changed', async () => {
    const run = unique('t');
    const before: Step[] = [
      { visitor: 'k', identify: { email: 'known@example.com' } },
      { visitor: 'm', identify: { email: 'm@example.com' } },
    ];
    const steps: Step[] = [
      { visitor: 'a1', event: 'view' },
      { visitor: 'k', event: 'view' },
      { visitor: 'a2', event: 'view' },
      { visitor: 'm', event: 'view' },
      // a2 gets a contact, then m's contact: a2 and m are one person from here on
      { visitor: 'a2', identify: { email: 'a2@example.com' } },
      { visitor: 'a2', event: 'view' },
      { visitor: 'a2', identify: { email: 'm@example.com' } },
      { visitor: 'm', event: 'view' },
      { visitor: 'a1', event: 'view' },
      { visitor: 'k', event: 'view' },
    ];
    const together = await shop();
    const alone = await shop();
    for (const s of [together, alone]) for (const it of items(s, run, before)) await batch([it]);
    contactReads = 0;
    await contactInserts(() => batch(items(together, run, steps)));
    // one read before the order is walked, one after each identify that linked (a2's, then a2 and m merged)
    expect(contactReads).to.equal(3);
    for (const it of items(alone, run, steps)) await batch([it]);
    const [got, want] = [await state(together), await state(alone)];
    expect(got).to.deep.equal(want);
    const exports = got.deliveries.filter(([kind]) => kind === 'event').map(([, b]) => b as { contact: string; visitor: { core_id: string } });
    expect(exports.map((b) => [b.visitor.core_id.slice(run.length + 1), b.contact])).to.deep.equal([
      ['k', 'known@example.com'],
      ['m', 'm@example.com'],
      ['a2', 'a2@example.com'],
      // the merged person's contacts, oldest first
      ['m', 'm@example.com'],
      ['m', 'a2@example.com'],
      ['k', 'known@example.com'],
    ]);
  });

  it('two identifies that do not meet, in two organisations, take one statement each', async () => {
    const run = unique('t');
    const [a, b] = [await shop(), await shop()];
    const steps: Step[] = [
      { visitor: 'v1', identify: { email: 'one@example.com' } },
      { visitor: 'v2', identify: { email: 'two@example.com' } },
    ];
    expect(await contactInserts(() => batch([...items(a, run, steps), ...items(b, run, steps)]))).to.equal(2);
    for (const s of [a, b]) {
      const st = await state(s);
      expect(st.contacts).to.deep.equal([
        ['EMAIL', 'one@example.com', [`${run}-v1`]],
        ['EMAIL', 'two@example.com', [`${run}-v2`]],
      ]);
      expect(st.deliveries.map(([kind, body]) => [kind, (body as { contact: string }).contact])).to.deep.equal([
        ['matched', 'one@example.com'],
        ['matched', 'two@example.com'],
      ]);
    }
  });

  it('lone identifies go with the visitors upsert when the batch brings no corex_id, and give what one by one gives', async () => {
    const run = unique('t');
    const before: Step[] = [{ visitor: 'k', identify: { email: 'known@example.com' } }];
    // one lone identify between an export of its visitor before and after it; a known contact (a merge at its turn)
    const one: Step[] = [
      { visitor: 'v1', event: 'view' },
      { visitor: 'v1', identify: { email: 'new@example.com', name: 'One' } },
      { visitor: 'v1', event: 'view' },
    ];
    const two: Step[] = [
      { visitor: 'v2', event: 'productview', product: 3 },
      { visitor: 'v3', identify: { email: 'known@example.com', phone: '+44 20 7946 0001' } },
      { visitor: 'v2', identify: { email: 'two@example.com' } },
      { visitor: 'v3', event: 'view' },
    ];
    // with a corex_id the upsert may stitch persons: the identifies take their own statement after it
    const corex: Step[] = [
      { visitor: 'v4', event: 'view', corex: 'c4' },
      { visitor: 'v5', identify: { email: 'five@example.com' } },
      { visitor: 'v6', identify: { email: 'six@example.com' } },
    ];
    const together = await shop();
    const alone = await shop();
    for (const s of [together, alone]) for (const it of items(s, run, before)) await batch([it]);
    const upsertWithContacts = (t: string) => /insert into visitors/i.test(t) && /insert into contacts/i.test(t);
    for (const steps of [one, two]) {
      expect(await contactInserts(() => batch(items(together, run, steps)))).to.equal(1);
      expect(texts().filter(upsertWithContacts)).to.have.length(1);
    }
    expect(await contactInserts(() => batch(items(together, run, corex)))).to.equal(1);
    expect(texts().filter(upsertWithContacts)).to.have.length(0);
    for (const it of items(alone, run, [...one, ...two, ...corex])) await batch([it]);

    const [got, want] = [await state(together), await state(alone)];
    expect(got).to.deep.equal(want);
    expect(got.persons).to.deep.include([`${run}-k`, `${run}-v3`]);
    expect(got.names).to.deep.include([`${run}-v1`, 'One']);
    const exports = got.deliveries.filter(([kind]) => kind === 'event').map(([, b]) => b as { contact?: string; visitor: { core_id: string } });
    // v1's view before its identify has no contact to go to (the one written ahead is hidden), the one after it has
    expect(exports.filter((b) => b.visitor.core_id === `${run}-v1`).map((b) => b.contact)).to.deep.equal(['new@example.com']);
  });

  it('a batch of lone identifies without exports is one statement between BEGIN and COMMIT', async () => {
    const run = unique('t');
    const { id: org } = (await newMerchant(srv, account)).organisation;
    const policy = (await srv.deps.organisations.policy(org))!;
    const s = { org, domain: '', policy };
    // the organisation's caches filled (targets, policy)
    await batch(items(s, run, [{ visitor: 'w', event: 'view' }]));
    const steps: Step[] = [
      { visitor: 'v1', identify: { email: 'one@example.com', name: 'One' } },
      { visitor: 'v2', identify: { email: 'two@example.com', phone: '+44 20 7946 0002' } },
      { visitor: 'v3', event: 'view' },
    ];
    await contactInserts(() => batch(items(s, run, steps)));
    // the statements of the batch's connection (the one that began its transaction)
    const client = sent.find((x) => x.text === 'begin')?.client;
    const ofBatch = sent.filter((x) => x.client === client).map((x) => (upsertLike(x.text) ? 'upsert' : x.text));
    expect(ofBatch).to.deep.equal(['begin', 'upsert', 'commit']);
    const st = await state(s);
    expect(st.contacts).to.have.deep.members([
      ['EMAIL', 'one@example.com', [`${run}-v1`]],
      ['PHONE', '+442079460002', [`${run}-v2`]],
      ['EMAIL', 'two@example.com', [`${run}-v2`]],
    ]);
    expect(st.links).to.deep.equal([
      [`${run}-v1`, 'EMAIL:one@example.com', false],
      [`${run}-v2`, 'EMAIL:two@example.com', false],
      [`${run}-v2`, 'PHONE:+442079460002', false],
    ]);
    expect(st.names).to.deep.equal([
      [`${run}-v1`, 'One'],
      [`${run}-v2`, null],
      [`${run}-v3`, null],
      [`${run}-w`, null],
    ]);
  });

  // storeBatch as ingest runs it: a batch of identifies only, that nobody is told of, goes without a transaction
  const store = (its: IngestItem[]) => storeBatch(srv.deps, srv.deps.db, its);

  /** An organisation without integrations (nobody hears of its identifies), its caches filled. */
  async function quietShop() {
    const { id: org, domain } = (await newMerchant(srv, account)).organisation;
    const policy = (await srv.deps.organisations.policy(org))!;
    const s = { org, domain, policy };
    await notificationsHeard(srv);
    await store(items(s, 'warm', [{ visitor: 'w', event: 'view' }]));
    return s;
  }

  /** The statements of the connection that sent the visitors upsert with contacts, as 'upsert', 'begin', 'commit'… */
  function ofUpsertsConnection(): string[] {
    const client = sent.find((x) => upsertLike(x.text))?.client;
    return sent.filter((x) => x.client === client).map((x) => (upsertLike(x.text) ? 'upsert' : x.text));
  }

  it('a batch of identifies only, that nobody is told of, is one statement outside any transaction', async () => {
    const run = unique('t');
    const [quiet, alone] = [await quietShop(), await quietShop()];
    const steps: Step[] = [
      { visitor: 'v1', identify: { email: 'one@example.com', name: 'One' } },
      { visitor: 'v2', identify: { email: 'two@example.com', phone: '+44 20 7946 0002' } },
      { visitor: 'v3', identify: { name: 'Three' } },
    ];
    expect(await contactInserts(() => store(items(quiet, run, steps)))).to.equal(1);
    expect(ofUpsertsConnection()).to.deep.equal(['upsert']);
    expect(texts()).to.not.include('begin');
    for (const it of items(alone, run, steps)) await batch([it]);
    const [got, want] = [await state(quiet), await state(alone)];
    expect(got).to.deep.equal(want);
    expect(got.links).to.have.length(3);
    expect(got.names).to.deep.include([`${run}-v3`, 'Three']);
  });

  it('a contact of another person: the one statement is refused and undone, and the transaction merges the two', async () => {
    const run = unique('t');
    const [quiet, alone] = [await quietShop(), await quietShop()];
    const before: Step[] = [{ visitor: 'k', identify: { email: 'known@example.com' } }];
    const steps: Step[] = [
      { visitor: 'v1', identify: { email: 'new@example.com' } },
      // a known contact: v3 joins k's person
      { visitor: 'v3', identify: { email: 'known@example.com', name: 'Three' } },
    ];
    for (const s of [quiet, alone]) for (const it of items(s, run, before)) await batch([it]);
    await contactInserts(() => store(items(quiet, run, steps)));
    // the refused statement, then the batch in a transaction (its upsert is the same statement without the refusal)
    const ofBatch = sent.map((x) => x.text).filter((t) => upsertLike(t) || t === 'begin' || t === 'commit' || t === 'rollback');
    expect(ofBatch.map((t) => (upsertLike(t) ? (/trackway_refuse/.test(t) ? 'refusing upsert' : 'upsert') : t))).to.deep.equal([
      'refusing upsert',
      'begin',
      'upsert',
      'commit',
    ]);
    for (const it of items(alone, run, steps)) await batch([it]);
    const [got, want] = [await state(quiet), await state(alone)];
    expect(got).to.deep.equal(want);
    expect(got.persons).to.deep.include([`${run}-k`, `${run}-v3`]);
    expect(got.names).to.deep.include([`${run}-v3`, 'Three']);
  });

  it('the refused statement leaves nothing: no visitor, contact, link or person of it', async () => {
    const run = unique('t');
    const s = await quietShop();
    for (const it of items(s, run, [{ visitor: 'k', identify: { email: 'known@example.com' } }])) await batch([it]);
    const its = items(s, run, [
      { visitor: 'v1', identify: { email: 'fresh@example.com', name: 'One' } },
      { visitor: 'v2', identify: { email: 'known@example.com' } },
    ]) as Extract<IngestItem, { kind: 'identify' }>[];
    const ahead = its.map((it) => ({ coreId: it.coreId, contacts: it.claim.contacts }));
    const db = srv.deps.db;
    const persons = async () =>
      Number(
        (
          await db
            .selectFrom('persons')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('org_id', '=', s.org)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = { state: await state(s), persons: await persons() };
    const refused = await upsertVisitorsIdentifying(db, visitorTouches(its), s.org, ahead, undefined, { refuseMerges: true }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(isMergeRefusal(refused), String(refused)).to.equal(true);
    expect({ state: await state(s), persons: await persons() }).to.deep.equal(before);
    // the same statement without the refusal writes them (what the transaction then merges)
    await upsertVisitorsIdentifying(db, visitorTouches(its), s.org, ahead);
    expect((await state(s)).links).to.have.length(3);
  });

  it('identifies of an organisation told of contact matches, or with an event, take the transaction', async () => {
    const run = unique('t');
    const told = await shop();
    const quiet = await quietShop();
    // its caches filled (targets, policy), once the notice of its new integration has been heard
    // (heard later, it would empty the targets just read: the read would then come inside the upsert's connection)
    await notificationsHeard(srv);
    await store(items(told, 'warm', [{ visitor: 'w', event: 'view' }]));
    await contactInserts(() => store(items(told, run, [{ visitor: 'v1', identify: { email: 'one@example.com' } }])));
    // the targets came from the cache, on no connection
    expect(texts().filter((t) => /from "integrations"/.test(t))).to.deep.equal([]);
    // then the recent activity read and the outbox, in the transaction
    const statements = ofUpsertsConnection();
    expect(statements.slice(0, 2)).to.deep.equal(['begin', 'upsert']);
    expect(statements.at(-1)).to.equal('commit');
    expect((await state(told)).deliveries.map(([kind]) => kind)).to.deep.equal(['matched']);
    await contactInserts(() =>
      store(
        items(quiet, run, [
          { visitor: 'v1', identify: { email: 'one@example.com' } },
          { visitor: 'v2', event: 'view' },
        ]),
      ),
    );
    expect(ofUpsertsConnection()).to.deep.equal(['begin', 'upsert', 'commit']);
  });
});

const upsertLike = (t: string) => /insert into visitors/i.test(t) && /insert into contacts/i.test(t) && /insert into visitor_contacts/i.test(t);
