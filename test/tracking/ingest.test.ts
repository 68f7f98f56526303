import { expect } from 'chai';
import { schemaValidator } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { BodyOf, TrackingError } from '../support/client.ts';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');

describe('tracking: identify and events', () => {
  let srv: TestServer;
  let account: Account;
  let org: OrgId;
  before(async () => {
    srv = await startTestServer();
    account = await newAccount(srv);
    org = (await newMerchant(srv, account)).organisation.id;
  });
  after(() => srv.stop());

  const visitor = () => ({ roaming: unique('r'), core: unique('c') });
  const eventPath = (v: { roaming: string; core: string }, name: string, corex = 'null', o = org) =>
    `/jsv1/${o}/${v.roaming}/${v.core}/${corex}/event/${name}`;
  const identifyPath = (v: { roaming: string; core: string }, payload: string, o: number = org) =>
    `/jsv1/identify/${o}/${v.roaming}/${v.core}/${payload}`;
  const readVisitor = (core: string) =>
    srv.api.get<BodyOf<'getVisitor'>>(`/v1/rest/${account.platform}/organisations/${org}/visitors/${core}`, { token: account.token });
  const readEvents = (query = '') =>
    srv.api.get<BodyOf<'listEvents'>>(`/v1/rest/${account.platform}/organisations/${org}/events${query}`, { token: account.token });

  describe('identify', () => {
    it('accepts base64url and standard base64 (with %2F), padding optional, and answers {core_id}', async () => {
      const v = visitor();
      // '?>?' encodes to 'Pz4/' in base64 and 'Pz4_' in base64url
      const payload = { email: 'Jane.Doe@Example.com', name: 'Jane ?>?' };
      for (const p of [b64url(payload), b64(payload).replace(/\//g, '%2F'), b64(payload).replace(/=+$/, '').replace(/\//g, '%2F')]) {
        const r = await srv.api.get(identifyPath(v, p));
        expect(r.status, r.text).to.equal(200);
        expect(r.body).to.deep.equal({ core_id: v.core });
      }
      const read = await readVisitor(v.core);
      expect(read.body.contacts).to.deep.equal([{ type: 'EMAIL', value: 'jane.doe@example.com', verified: false }]);
      expect(read.body.name).to.equal('Jane ?>?');
    });

    it('normalises phones and links both contacts', async () => {
      const v = visitor();
      const r = await srv.api.get(identifyPath(v, b64url({ email: ' A@B.co ', phone: '+44 (20) 7946-0958' })));
      expect(r.status).to.equal(200);
      const read = await readVisitor(v.core);
      expect(read.body.contacts).to.have.deep.members([
        { type: 'EMAIL', value: 'a@b.co', verified: false },
        { type: 'PHONE', value: '+442079460958', verified: false },
      ]);
    });

    const badPayloads: [string, string][] = [
      ['not base64', '!!!!'],
      ['garbage that is not base64', '@@not-base64@@'],
      ['a lone base64 char', 'QUJDR'],
      ['not UTF-8', Buffer.from([0xff, 0xfe, 0xfd]).toString('base64url')],
      ['not JSON', Buffer.from('hello').toString('base64url')],
      ['a JSON array', b64url(['a@b.co'])],
      ['an empty object', b64url({})],
      ['an unknown field', b64url({ email: 'a@b.co', age: 3 })],
      ['a malformed email', b64url({ email: 'nope' })],
      ['a number as email', b64url({ email: 12 })],
      ['a malformed phone', b64url({ phone: 'call me' })],
    ];
    for (const [what, payload] of badPayloads) {
      it(`answers 400 invalid_payload for ${what}`, async () => {
        const r = await srv.api.get<TrackingError>(identifyPath(visitor(), payload));
        expect(r.status, r.text).to.equal(400);
        expect(r.body.error, r.text).to.equal('invalid_payload');
        // words, never the contract's regular expressions
        expect(r.body.message, r.text).not.to.match(/pattern|\^|\$|\\s/);
      });
    }

    it('answers 404 unknown_organisation for an unknown or inactive organisation', async () => {
      const r = await srv.api.get<TrackingError>(identifyPath(visitor(), b64url({ email: 'a@b.co' }), 987654));
      expect(r.status).to.equal(404);
      expect(r.body.error).to.equal('unknown_organisation');
      const other = (await newMerchant(srv, account)).organisation.id;
      await srv.deps.db.updateTable('organisations').set({ is_active: false }).where('id', '=', other).execute();
      const r2 = await srv.api.post<TrackingError>(eventPath(visitor(), 'view', 'null', other), { page: 'https://shop.example/' });
      expect(r2.status).to.equal(404);
      expect(r2.body.error).to.equal('unknown_organisation');
    });

    it('checks path ids against the pattern', async () => {
      for (const path of [
        `/jsv1/identify/${org}/${'r'.repeat(65)}/c1/${b64url({ email: 'a@b.co' })}`,
        `/jsv1/identify/${org}/r1/c%20d/${b64url({ email: 'a@b.co' })}`,
        `/jsv1/identify/abc/r1/c1/${b64url({ email: 'a@b.co' })}`,
        `/jsv1/identify/0/r1/c1/${b64url({ email: 'a@b.co' })}`,
        `/jsv1/identify/${org}/r1/c1/%E0%A4%A`,
      ]) {
        const r = await srv.api.get<TrackingError>(path);
        expect(r.status, path).to.equal(400);
        expect(r.body.error, path).to.equal('invalid_request');
      }
    });
  });

  describe('events', () => {
    const bodies: Record<string, Record<string, unknown>> = {
      view: { page: 'https://shop.example/' },
      updatecart: {
        cart_url: 'https://shop.example/cart',
        product_id: 11,
        line_items: [{ quantity: 1, title: 'Shirt', line_price: 20, id: 'li1', product_id: 11, image_url: 'https://cdn.example/s.png' }],
        cart_value: 20,
      },
      removefromcart: { cart_url: 'https://shop.example/cart', product_id: 11, line_items: [], cart_value: 0 },
      checkout: {
        checkout: 'https://shop.example/checkout',
        items: [{ product_id: 11, price: 20, product_url: 'https://shop.example/p/11' }],
        cart_value: 20,
      },
      buy: {
        checkout_url: 'https://shop.example/checkout',
        order_id: 'o-1',
        items: [{ product_id: 11, price: 20, product_url: 'https://shop.example/p/11' }],
      },
      productview: { product_id: 11, price: 20, product_url: 'https://shop.example/p/11' },
      categoryview: { category: 'shirts' },
    };
    for (const [name, body] of Object.entries(bodies)) {
      it(`records ${name} (202 after commit) with exactly its body`, async () => {
        const v = visitor();
        const r = await srv.api.post(eventPath(v, name), body);
        expect(r.status, r.text).to.equal(202);
        expect(r.body).to.deep.equal({ status: 'accepted' });
        expect(r.headers.get('access-control-allow-origin')).to.equal('*');
        const list = await readEvents(`?core_id=${v.core}`);
        expect(list.body.items).to.have.length(1);
        expect(list.body.items[0]).to.include({ name, core_id: v.core, roaming_id: v.roaming, corex_id: null });
        expect(list.body.items[0]!.body).to.deep.equal(body);
      });
    }

    it('accepts text/plain JSON (sendBeacon) and stores a corex_id', async () => {
      const v = visitor();
      const r = await srv.api.request('POST', eventPath(v, 'categoryview', 'cust-7'), {
        raw: JSON.stringify({ category: 'hats' }),
        headers: { 'content-type': 'text/plain;charset=UTF-8' },
      });
      expect(r.status).to.equal(202);
      const read = await readVisitor(v.core);
      expect(read.body.corex_id).to.equal('cust-7');
    });

    it('answers the view pixel with a no-store GIF, page from ?page= or Referer', async () => {
      const v = visitor();
      const r = await srv.api.get(`${eventPath(v, 'view')}?page=${encodeURIComponent('https://shop.example/a')}`);
      expect(r.status).to.equal(200);
      expect(r.headers.get('content-type')).to.equal('image/gif');
      expect(r.headers.get('cache-control')).to.equal('no-store');
      expect((r.body as Buffer).subarray(0, 6).toString()).to.equal('GIF89a');
      const r2 = await srv.api.get(eventPath(v, 'view'), { headers: { referer: 'https://shop.example/b' } });
      expect(r2.status).to.equal(200);
      const r3 = await srv.api.get(eventPath(v, 'view'));
      expect(r3.status).to.equal(400);
      const list = await readEvents(`?core_id=${v.core}&name=view`);
      expect(list.body.items.map((e) => ('page' in e.body ? e.body.page : undefined))).to.deep.equal([
        'https://shop.example/b',
        'https://shop.example/a',
      ]);
    });

    const invalid: [string, string, unknown][] = [
      ['a missing field', 'productview', { product_id: 1 }],
      ['a wrong type', 'updatecart', { cart_url: 'https://s.example/c', product_id: '11' }],
      ['a negative price', 'productview', { product_id: 1, price: -1, product_url: 'https://s.example/p' }],
      ['a relative URL', 'view', { page: '/home' }],
      ['a javascript: URL', 'view', { page: 'javascript:alert(1)' }],
      ['an unknown field', 'categoryview', { category: 'x', extra: true }],
      ['a float product id', 'productview', { product_id: 1.5, product_url: 'https://s.example/p' }],
      ['a huge product id', 'productview', { product_id: 1e300, product_url: 'https://s.example/p' }],
      ['a bad line item', 'updatecart', { cart_url: 'https://s.example/c', product_id: 1, line_items: [{ quantity: 'two' }] }],
      ['an array body', 'view', [{ page: 'https://s.example/' }]],
    ];
    for (const [what, name, body] of invalid) {
      it(`answers 400 invalid_request for ${what}`, async () => {
        const r = await srv.api.post<TrackingError>(eventPath(visitor(), name), body);
        expect(r.status, r.text).to.equal(400);
        expect(r.body.error).to.equal('invalid_request');
      });
    }

    it('answers an unknown event name with 404 and a wrong method with 405', async () => {
      expect((await srv.api.post(eventPath(visitor(), 'dance'), {})).status).to.equal(404);
      expect((await srv.api.get(eventPath(visitor(), 'buy'))).status).to.equal(405);
    });

    it('acknowledges only what it stored: 200 concurrent events, 200 rows', async function () {
      this.timeout(60_000);
      const v = visitor();
      const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => srv.api.post(eventPath(v, 'categoryview'), { category: `c${i}` })));
      expect(replies.every((r) => r.status === 202)).to.equal(true);
      const rows = await srv.deps.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('org_id', '=', org)
        .where('core_id', '=', v.core)
        .executeTakeFirstOrThrow();
      expect(Number(rows.n)).to.equal(200);
    });
  });

  describe('outbox', () => {
    it('writes contact-match and event deliveries in the same transaction, with exact bodies', async () => {
      // product and cart URLs under the organisation's own domain (others never reach a notification)
      const m = await newMerchant(srv, account, { domain: 's.example' });
      const o = m.organisation.id;
      const hookAll = await newWebhook(srv, account, o, { do_events: true, do_contacts: true });
      const hookContacts = await newWebhook(srv, account, o, { do_events: false, do_contacts: true });
      const v = visitor();
      await srv.api.post(eventPath(v, 'productview', 'null', o), { product_id: 5, price: 1, product_url: 'https://s.example/p/5' });
      await srv.api.post(eventPath(v, 'updatecart', 'null', o), { product_id: 5, cart_url: 'https://s.example/cart' });
      expect(await deliveries(o)).to.have.length(0); // not a contact yet
      await srv.api.get(identifyPath(v, b64url({ email: 'buyer@s.example', phone: '+1 555 0100' }), o));
      await srv.api.get(identifyPath(v, b64url({ email: 'buyer@s.example' }), o)); // same link again: nothing new
      await srv.api.post(eventPath(v, 'buy', 'null', o), { order_id: 'o-9' });
      const rows = await deliveries(o);
      const matched = rows.filter((d) => d.kind === 'matched');
      expect(matched).to.have.length(4); // 2 contacts × 2 integrations with do_contacts
      const today = new Date().toISOString().slice(0, 10);
      const email = JSON.parse(matched.find((d) => d.integration_id === hookAll.id && d.body.includes('EMAIL'))!.body);
      expect(email.matched_at).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(email).to.deep.equal({
        medium: 'matched',
        contact: 'buyer@s.example',
        type: 'EMAIL',
        date: today,
        org_id: String(o),
        verified: false,
        matched_at: email.matched_at,
        visitor: { core_id: v.core, roaming_id: v.roaming, corex_id: null },
        last_addtocart: 'https://s.example/p/5',
        last_view: ['https://s.example/p/5'],
      });
      const events = rows.filter((d) => d.kind === 'event');
      expect(events.map((d) => d.integration_id)).to.deep.equal([hookAll.id, hookAll.id]); // buy × 2 contacts, do_events only
      expect(events.map((d) => JSON.parse(d.body).event)).to.deep.equal(['buy', 'buy']);
      const matchedSchema = schemaValidator('ContactMatchedNotification');
      const eventSchema = schemaValidator('EventExportedNotification');
      for (const d of rows) {
        const v2 = d.kind === 'matched' ? matchedSchema : eventSchema;
        expect(v2(JSON.parse(d.body)), JSON.stringify(v2.errors)).to.equal(true);
      }
      void hookContacts;
    });
  });

  async function deliveries(orgId: OrgId) {
    return srv.deps.db
      .selectFrom('deliveries')
      .select(['kind', 'integration_id', 'body', 'status'])
      .where('org_id', '=', orgId)
      .orderBy('id')
      .execute();
  }
});
