// Richer event exports and contact matches (issue 15), end to end: a real
// tracker-shaped request stream into the server, the dispatcher posting to a
// real receiver on 127.0.0.1, and the bodies as the receiver got them. The
// interface's seed fields stay exactly as they were; the added fields are
// event_id, occurred_at, source_event, visitor, properties (events) and
// matched_at, visitor (matches).
import { expect } from 'chai';
import { schemaValidator } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import { b64url } from '../support/payload.ts';
import type { BodyOf } from '../support/client.ts';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('webhooks: richer event exports and contact matches', function () {
  this.timeout(30_000);
  let srv: TestServer;
  let account: Account;
  let receiver: TestReceiver;

  before(async () => {
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { dispatcher: true });
    account = await newAccount(srv);
    receiver = await TestReceiver.start(() => ({ status: 204 }));
  });
  after(async () => {
    await receiver.close();
    await srv.stop();
  });

  it('adds event_id, occurred_at, source_event, visitor and properties, keeping the seed fields exactly', async () => {
    const m = await newMerchant(srv, account, { domain: `${unique('s')}.example` });
    const o = m.organisation.id;
    const domain = m.organisation.domain;
    await newWebhook(srv, account, o, { endpoint: `${receiver.url}/${o}`, do_events: true, do_contacts: true });
    const v = { roaming: unique('r'), core: unique('c') };
    const corex = unique('cust');
    const path = (name: string) => `/jsv1/${o}/${v.roaming}/${v.core}/${corex}/event/${name}`;

    // a contact first, so that every event after it is exported
    const before = Date.now();
    const id = await srv.api.get(`/jsv1/identify/${o}/${v.roaming}/${v.core}/${b64url({ email: 'Bo.Buyer@Example.com' })}`);
    expect(id.status, id.text).to.equal(200);
    const sent: [string, Record<string, unknown>][] = [
      ['view', { page: `https://${domain}/` }],
      ['productview', { product_id: 42, price: 19.9, product_url: `https://${domain}/products/linen-shirt` }],
      [
        'updatecart',
        {
          cart_url: `https://${domain}/cart`,
          product_id: 42,
          line_items: [{ quantity: 2, title: 'Linen shirt', line_price: 39.8, id: 'l-1', product_id: 42, image_url: `https://${domain}/i/42.jpg` }],
          cart_value: 39.8,
        },
      ],
      ['removefromcart', { cart_url: `https://${domain}/cart`, product_id: 42, line_items: [], cart_value: 0 }],
      [
        'checkout',
        {
          checkout: `https://${domain}/checkout`,
          items: [{ product_id: 42, price: 19.9, product_url: `https://${domain}/products/linen-shirt` }],
          cart_value: 19.9,
        },
      ],
      ['buy', { checkout_url: `https://${domain}/thanks`, order_id: 'o-1001', items: [{ product_id: 42, price: 19.9 }] }],
      ['categoryview', { category: 'shirts' }],
    ];
    for (const [name, body] of sent) {
      const r = await srv.api.post(path(name), body);
      expect(r.status, r.text).to.equal(202);
    }
    const got = (await receiver.waitFor(1 + sent.length)).filter((req) => req.path === `/hook/${o}`);
    const after = Date.now();
    expect(got).to.have.length(1 + sent.length);
    const bodies = got.map((req) => JSON.parse(req.body) as Record<string, unknown>);
    const validMatched = schemaValidator('ContactMatchedNotification');
    const validEvent = schemaValidator('EventExportedNotification');

    const matched = bodies.find((b) => b.medium === 'matched')!;
    expect(validMatched(matched), JSON.stringify(validMatched.errors)).to.equal(true);
    const { matched_at: matchedAt, visitor: matchedVisitor, ...matchedSeed } = matched;
    expect(matchedSeed).to.deep.equal({
      medium: 'matched',
      contact: 'bo.buyer@example.com',
      type: 'EMAIL',
      date: new Date(Date.parse(matchedAt as string)).toISOString().slice(0, 10),
      org_id: String(o),
      verified: false,
    });
    expect(matchedAt).to.match(ISO_MS);
    expect(Date.parse(matchedAt as string)).to.be.within(before - 1, after + 1);
    // the identify came before any event brought the corex id
    expect(matchedVisitor).to.deep.equal({ core_id: v.core, roaming_id: v.roaming, corex_id: null });

    // the stored events, oldest first, to compare ids with
    const list = await srv.api.get<BodyOf<'listEvents'>>(`/v1/rest/${account.platform}/organisations/${o}/events?limit=50`, { token: account.token });
    expect(list.status).to.equal(200);
    const stored = list.body.items.slice().reverse();
    expect(stored.map((e) => e.name)).to.deep.equal(sent.map(([n]) => n));

    const exported = bodies.filter((b) => b.medium === 'event');
    const exportName: Record<string, string> = {
      view: 'view',
      productview: 'view',
      updatecart: 'addtocart',
      buy: 'buy',
      removefromcart: 'removefromcart',
      checkout: 'checkout',
      categoryview: 'categoryview',
    };
    const ids = new Set<unknown>();
    sent.forEach(([name, props], i) => {
      const b = exported.find((x) => x.source_event === name);
      expect(b, `export of ${name}`).to.not.equal(undefined);
      expect(validEvent(b), JSON.stringify(validEvent.errors)).to.equal(true);
      const { event_id: eventId, occurred_at: occurredAt, source_event: source, visitor, properties, verified, ...seed } = b!;
      // identified without a hash: the browser alone said so (issue 22, point 2)
      expect(verified).to.equal(false);
      // the interface's fields, exactly as before
      expect(seed).to.deep.equal({
        medium: 'event',
        contact: 'bo.buyer@example.com',
        type: 'EMAIL',
        date: (occurredAt as string).slice(0, 10),
        org_id: String(o),
        event: exportName[name],
      });
      expect(source).to.equal(name);
      expect(eventId).to.equal(stored[i]!.id);
      ids.add(eventId);
      expect(occurredAt).to.match(ISO_MS);
      expect(Date.parse(occurredAt as string)).to.be.within(before - 1, after + 1);
      expect(visitor).to.deep.equal({ core_id: v.core, roaming_id: v.roaming, corex_id: corex });
      expect(properties).to.deep.equal(props);
    });
    expect(ids.size).to.equal(sent.length);
    // view and productview both export as `view` but are told apart
    expect(exported.filter((b) => b.event === 'view').map((b) => b.source_event)).to.have.members(['view', 'productview']);
  });

  it('gives one event the same event_id for every contact and integration, and the pixel its page', async () => {
    const m = await newMerchant(srv, account, { domain: `${unique('s')}.example` });
    const o = m.organisation.id;
    await newWebhook(srv, account, o, { endpoint: `${receiver.url}/${o}/a`, do_events: true, do_contacts: false });
    await newWebhook(srv, account, o, { endpoint: `${receiver.url}/${o}/b`, do_events: true, do_contacts: false });
    const v = { roaming: unique('r'), core: unique('c') };
    await srv.api.get(`/jsv1/identify/${o}/${v.roaming}/${v.core}/${b64url({ email: 'two@example.com', phone: '+1 555 0100' })}`);
    const start = receiver.requests.length;
    const page = `https://${m.organisation.domain}/about`;
    const pixel = await srv.api.get(`/jsv1/${o}/${v.roaming}/${v.core}/null/event/view?page=${encodeURIComponent(page)}`);
    expect(pixel.status).to.equal(200);
    const got = (await receiver.waitFor(start + 4)).slice(start).filter((req) => req.path.startsWith(`/hook/${o}/`));
    expect(got).to.have.length(4); // 2 contacts × 2 integrations
    const bodies = got.map((req) => JSON.parse(req.body) as Record<string, unknown>);
    expect(new Set(bodies.map((b) => b.event_id)).size).to.equal(1);
    expect(new Set(bodies.map((b) => `${String(b.type)}:${String(b.contact)}`))).to.deep.equal(new Set(['EMAIL:two@example.com', 'PHONE:+15550100']));
    for (const b of bodies) {
      expect(b.source_event).to.equal('view');
      expect(b.properties).to.deep.equal({ page });
      expect(b.visitor).to.deep.equal({ core_id: v.core, roaming_id: v.roaming, corex_id: null });
    }
  });

  it('leaves URLs outside the allowed domains out of properties (the stored event keeps them)', async () => {
    const m = await newMerchant(srv, account, { domain: `${unique('s')}.example` });
    const o = m.organisation.id;
    const shop = `https://${m.organisation.domain}`;
    await newWebhook(srv, account, o, { endpoint: `${receiver.url}/${o}`, do_events: true, do_contacts: false });
    const v = { roaming: unique('r'), core: unique('c') };
    await srv.api.get(`/jsv1/identify/${o}/${v.roaming}/${v.core}/${b64url({ email: 'p@example.com' })}`);
    const start = receiver.requests.length;
    const phish = 'https://phish.attacker.example/login';
    const path = (name: string) => `/jsv1/${o}/${v.roaming}/${v.core}/null/event/${name}`;
    expect((await srv.api.post(path('productview'), { product_id: 7, price: 5, product_url: phish })).status).to.equal(202);
    const cart = {
      cart_url: phish,
      product_id: 7,
      line_items: [
        { quantity: 1, product_id: 7, image_url: phish },
        { quantity: 1, product_id: 8, image_url: `${shop}/i/8.jpg` },
      ],
      cart_value: 5,
    };
    expect((await srv.api.post(path('updatecart'), cart)).status).to.equal(202);
    const got = (await receiver.waitFor(start + 2)).slice(start).filter((req) => req.path === `/hook/${o}`);
    const bodies = got.map((req) => JSON.parse(req.body) as Record<string, unknown>);
    const validEvent = schemaValidator('EventExportedNotification');
    for (const b of bodies) expect(validEvent(b), JSON.stringify(validEvent.errors)).to.equal(true);
    expect(bodies.find((b) => b.source_event === 'productview')!.properties).to.deep.equal({ product_id: 7, price: 5 });
    expect(bodies.find((b) => b.source_event === 'updatecart')!.properties).to.deep.equal({
      product_id: 7,
      line_items: [
        { quantity: 1, product_id: 7 },
        { quantity: 1, product_id: 8, image_url: `${shop}/i/8.jpg` },
      ],
      cart_value: 5,
    });
    for (const b of bodies) expect(JSON.stringify(b)).to.not.include('phish.attacker.example');
    const list = await srv.api.get<BodyOf<'listEvents'>>(`/v1/rest/${account.platform}/organisations/${o}/events?core_id=${v.core}`, {
      token: account.token,
    });
    expect(JSON.stringify(list.body.items)).to.include('phish.attacker.example');
  });
});
