// submitLearningEvent (the organisation's org_token, error 5104) and
// docs/design.md "Analytics host"; plus the platform read GET .../learn-events.
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type Account, type Merchant, newAccount, newMerchant } from '../support/accounts.ts';
import { UNKNOWN_TOKEN, learn } from '../support/registration.ts';
import { errorBody, type BodyOf, type PlatformError, type Reply } from '../support/client.ts';
import { expectInvalid } from '../support/expect.ts';
import type { OrgId } from '../../src/db/tenancy.ts';

describe('learning events (submitLearningEvent)', () => {
  let srv: TestServer;
  let acme: Account;

  before(async () => {
    srv = await startTestServer({ TRUST_PROXY: 'true' });
    acme = await newAccount(srv, 'acme');
  });
  after(() => srv.stop());

  const stored = (orgId: OrgId) => srv.database.handle.db.selectFrom('learn_events').selectAll().where('org_id', '=', orgId).orderBy('id').execute();

  const list = <T = BodyOf<'listLearnEvents'>>(m: Merchant, query = '', account: Account = acme) =>
    srv.api.get<T>(`/v1/rest/${account.platform}/organisations/${m.organisation.id}/learn-events${query}`, { token: account.token });

  describe('POST /rest/v1/learn/event', () => {
    it('stores an event with every field and answers 200 {status: "success"}', async () => {
      const m = await newMerchant(srv, acme);
      const before = Date.now();
      const r = await learn(srv, {
        org_token: m.organisation.token,
        eventName: 'newsletter_signup',
        eventVal: { list: 'weekly', source: 'footer', nested: { n: 1, ok: true, tags: ['a', 'b'], none: null } },
        eventCategory: 'CRM',
        u: 'https://shop.example.com/pages/newsletter?x=1#top',
        lang: 'pt-BR',
      });
      const after = Date.now();
      expect(r.status).to.equal(200);
      expect(r.body).to.deep.equal({ status: 'success' });
      const rows = await stored(m.organisation.id);
      expect(rows).to.have.length(1);
      const row = rows[0]!;
      expect(row).to.include({
        event_name: 'newsletter_signup',
        event_category: 'CRM',
        u: 'https://shop.example.com/pages/newsletter?x=1#top',
        lang: 'pt-BR',
      });
      expect(row.event_val).to.deep.equal({ list: 'weekly', source: 'footer', nested: { n: 1, ok: true, tags: ['a', 'b'], none: null } });
      // stored with the time received (the database's clock; same machine, generous bounds)
      expect(row.received_at.getTime()).to.be.within(before - 5_000, after + 5_000);
    });

    it('defaults eventCategory to EXTERNAL and lang to en, and stores u as null when absent', async () => {
      const m = await newMerchant(srv, acme);
      const r = await learn(srv, { org_token: m.organisation.token, eventName: 'coupon_applied', eventVal: 'SUMMER10' });
      expect(r.status).to.equal(200);
      expect(r.body).to.deep.equal({ status: 'success' });
      const [row] = await stored(m.organisation.id);
      expect(row).to.include({ event_name: 'coupon_applied', event_val: 'SUMMER10', event_category: 'EXTERNAL', u: null, lang: 'en' });
    });

    it('accepts eventVal as a string (empty too) or an object (empty too), stored as sent', async () => {
      const m = await newMerchant(srv, acme);
      const values = ['', 'x'.repeat(10_000), 'plain text with "quotes" and ünïcödé 🎉', {}, { a: { b: { c: [1, 2, { d: 'e' }] } } }];
      for (const eventVal of values) {
        const r = await learn(srv, { org_token: m.organisation.token, eventName: 'v', eventVal });
        expect(r.status, JSON.stringify(eventVal).slice(0, 40)).to.equal(200);
      }
      expect((await stored(m.organisation.id)).map((e) => e.event_val)).to.deep.equal(values);
    });

    it('refuses eventVal of any other JSON type (number, boolean, array, null) with 5100 and stores nothing', async () => {
      const m = await newMerchant(srv, acme);
      for (const eventVal of [42, 0, 1.5, true, false, [], ['a'], [{ a: 1 }], null]) {
        expectInvalid(await learn(srv, { org_token: m.organisation.token, eventName: 'v', eventVal }), JSON.stringify(eventVal));
      }
      expectInvalid(await learn(srv, { org_token: m.organisation.token, eventName: 'v', eventVal: 'x'.repeat(10_001) }), 'eventVal too long');
      expect(await stored(m.organisation.id)).to.have.length(0);
    });

    it('accepts absolute URLs in u and refuses anything else with 5100', async () => {
      const m = await newMerchant(srv, acme);
      for (const u of ['https://shop.example.com/a', 'http://127.0.0.1:8080/x?y=z', 'mailto:owner@shop.example']) {
        const r = await learn(srv, { org_token: m.organisation.token, eventName: 'u', eventVal: 'x', u });
        expect(r.status, u).to.equal(200);
      }
      for (const u of ['', 'not a url', '/relative/path', 'shop.example.com/page', '//shop.example.com/x', 'https://exa mple.com/', 42, null]) {
        expectInvalid(await learn(srv, { org_token: m.organisation.token, eventName: 'u', eventVal: 'x', u }), `u=${JSON.stringify(u)}`);
      }
      expect((await stored(m.organisation.id)).map((e) => e.u)).to.deep.equal([
        'https://shop.example.com/a',
        'http://127.0.0.1:8080/x?y=z',
        'mailto:owner@shop.example',
      ]);
    });

    it('answers an unknown org_token with 400 and code 5104, exactly', async () => {
      const m = await newMerchant(srv, acme);
      const token = m.organisation.token;
      for (const org_token of [
        'nope',
        token.slice(0, -1),
        `${token}x`,
        token.toUpperCase() === token ? token.toLowerCase() : token.toUpperCase(),
        'x'.repeat(128),
      ]) {
        const r = await learn(srv, { org_token, eventName: 'e', eventVal: 'v' });
        expect(r.status, org_token).to.equal(400);
        expect(errorBody(r)).to.deep.equal(UNKNOWN_TOKEN);
      }
      expect(await stored(m.organisation.id)).to.have.length(0);
    });

    it('answers the token of an inactive organisation with 5104', async () => {
      const m = await newMerchant(srv, acme);
      await srv.database.handle.db.updateTable('organisations').set({ is_active: false }).where('id', '=', m.organisation.id).execute();
      const r = await learn(srv, { org_token: m.organisation.token, eventName: 'e', eventVal: 'v' });
      expect(r.status).to.equal(400);
      expect(errorBody(r)).to.deep.equal(UNKNOWN_TOKEN);
      expect(await stored(m.organisation.id)).to.have.length(0);
    });

    it('stores each event under the organisation of its token only', async () => {
      const a = await newMerchant(srv, acme);
      const b = await newMerchant(srv, acme);
      expect((await learn(srv, { org_token: a.organisation.token, eventName: 'for-a', eventVal: 'x' })).status).to.equal(200);
      expect((await learn(srv, { org_token: b.organisation.token, eventName: 'for-b', eventVal: 'x' })).status).to.equal(200);
      expect((await stored(a.organisation.id)).map((e) => e.event_name)).to.deep.equal(['for-a']);
      expect((await stored(b.organisation.id)).map((e) => e.event_name)).to.deep.equal(['for-b']);
    });

    it('requires org_token, eventName and eventVal (5100), before looking at the token', async () => {
      const m = await newMerchant(srv, acme);
      const full = { org_token: m.organisation.token, eventName: 'e', eventVal: 'v' };
      for (const key of ['org_token', 'eventName', 'eventVal'] as const) {
        const body: Record<string, unknown> = { ...full };
        delete body[key];
        const r = await learn<BodyOf<'submitLearningEvent', 400>>(srv, body);
        expectInvalid(r, `without ${key}`);
        expect(r.body.reason).to.include(key);
      }
      // an invalid body with an unknown token is invalid input, not an unknown token
      expectInvalid(await learn(srv, { org_token: 'nope', eventName: 'e', eventVal: 7 }), 'unknown token, bad eventVal');
      expect(await stored(m.organisation.id)).to.have.length(0);
    });

    it('refuses wrong types, empty strings, over-long fields and unknown fields with 5100', async () => {
      const m = await newMerchant(srv, acme);
      const ok = { org_token: m.organisation.token, eventName: 'e', eventVal: 'v' };
      const bad: Record<string, unknown>[] = [
        { ...ok, org_token: 42 },
        { ...ok, org_token: '' },
        { ...ok, eventName: '' },
        { ...ok, eventName: 7 },
        { ...ok, eventName: 'n'.repeat(201) },
        { ...ok, eventCategory: '' },
        { ...ok, eventCategory: 5 },
        { ...ok, eventCategory: null },
        { ...ok, lang: '' },
        { ...ok, lang: ['en'] },
        { ...ok, lang: 'l'.repeat(36) },
        { ...ok, u: `https://shop.example/${'a'.repeat(2048)}` },
        { ...ok, extra: 'field' },
      ];
      for (const body of bad) expectInvalid(await learn(srv, body), JSON.stringify(body).slice(0, 120));
      expect(await stored(m.organisation.id)).to.have.length(0);
    });

    it('refuses text PostgreSQL cannot store (NUL, unpaired surrogates) and hostile nesting with 5100, never 500', async () => {
      const m = await newMerchant(srv, acme);
      const ok = { org_token: m.organisation.token, eventName: 'e', eventVal: 'v' };
      const deep = (n: number) => `${'{"d":'.repeat(n)}1${'}'.repeat(n)}`;
      const withVal = (raw: string) => `{"org_token":${JSON.stringify(ok.org_token)},"eventName":"e","eventVal":${raw}}`;
      const bodies = [
        JSON.stringify({ ...ok, eventName: 'a\u0000b' }),
        JSON.stringify({ ...ok, eventVal: 'a\u0000b' }),
        JSON.stringify({ ...ok, eventVal: { k: ['x', { y: 'a\u0000b' }] } }),
        JSON.stringify({ ...ok, eventVal: { 'a\u0000b': 1 } }),
        JSON.stringify({ ...ok, eventCategory: 'A\u0000' }),
        JSON.stringify({ ...ok, lang: 'e\u0000n' }),
        JSON.stringify({ ...ok, eventVal: 'lone \ud800 surrogate' }),
        JSON.stringify({ ...ok, eventVal: { s: 'lone \udc00 low' } }),
        withVal(deep(33)),
        withVal(deep(50_000)),
        withVal(`{"a":${'['.repeat(50_000)}${']'.repeat(50_000)}}`),
      ];
      for (const raw of bodies) {
        const r = await srv.api.request('POST', '/rest/v1/learn/event', { raw, headers: { 'content-type': 'application/json' } });
        expectInvalid(r, raw.slice(0, 80));
      }
      // a paired surrogate (an emoji) and moderate nesting are fine
      let nested: Record<string, unknown> = { leaf: '🎉' };
      for (let i = 0; i < 20; i++) nested = { d: nested };
      const r = await learn(srv, { ...ok, eventVal: nested });
      expect(r.status).to.equal(200);
      expect((await stored(m.organisation.id)).map((e) => e.event_val)).to.deep.equal([nested]);
    });

    it('answers a missing, empty or non-JSON body, and JSON that is not an object, with 400/5100', async () => {
      const missing = await srv.api.request('POST', '/rest/v1/learn/event');
      expectInvalid(missing, 'no body');
      for (const raw of [
        '',
        '{bad',
        '{"org_token": "x",}',
        '"a string"',
        '12',
        'null',
        'true',
        '[]',
        '[{"org_token":"x","eventName":"e","eventVal":"v"}]',
      ]) {
        const r = await srv.api.request('POST', '/rest/v1/learn/event', { raw, headers: { 'content-type': 'application/json' } });
        expectInvalid(r, `raw ${raw}`);
      }
    });

    it('answers a body sent with another media type with 415/5115 in the analytics shape', async () => {
      for (const type of ['application/x-www-form-urlencoded', 'text/plain']) {
        const r = await srv.api.request('POST', '/rest/v1/learn/event', {
          raw: 'org_token=x&eventName=e&eventVal=v',
          headers: { 'content-type': type },
        });
        expect(r.status, type).to.equal(415);
        expect(r.body).to.include({ status: 'failed', code: 5115 });
      }
    });

    it('answers other methods with 405/5105 in the analytics shape', async () => {
      const r = await srv.api.get('/rest/v1/learn/event');
      expect(r.status).to.equal(405);
      expect(r.body).to.include({ status: 'failed', code: 5105 });
    });
  });

  describe('GET /v1/rest/{platform_name}/organisations/{org_id}/learn-events', () => {
    it("lists the organisation's events newest first as LearnEvent items", async () => {
      const m = await newMerchant(srv, acme);
      await learn(srv, { org_token: m.organisation.token, eventName: 'first', eventVal: 'SUMMER10' });
      await learn(srv, {
        org_token: m.organisation.token,
        eventName: 'second',
        eventVal: { list: 'weekly' },
        eventCategory: 'CRM',
        u: 'https://shop.example.com/n',
        lang: 'de',
      });
      const r = await list(m);
      expect(r.status).to.equal(200);
      expect(r.body.next_cursor).to.equal(null);
      expect(r.body.items).to.have.length(2);
      const second = r.body.items[0]!;
      const first = r.body.items[1]!;
      expect(second).to.deep.equal({
        id: second.id,
        event_name: 'second',
        event_val: { list: 'weekly' },
        event_category: 'CRM',
        u: 'https://shop.example.com/n',
        lang: 'de',
        received_at: second.received_at,
      });
      expect(first).to.deep.include({ event_name: 'first', event_val: 'SUMMER10', event_category: 'EXTERNAL', u: null, lang: 'en' });
      expect(second.id).to.be.greaterThan(first.id);
      expect(Date.parse(second.received_at)).to.be.at.least(Date.parse(first.received_at));
    });

    it('lists an organisation without events as empty', async () => {
      const m = await newMerchant(srv, acme);
      expect((await list(m)).body).to.deep.equal({ items: [], next_cursor: null });
    });

    it('pages with an opaque cursor and the limit, and refuses a cursor of another organisation', async () => {
      const m = await newMerchant(srv, acme);
      for (let k = 0; k < 5; k++) await learn(srv, { org_token: m.organisation.token, eventName: `e${k}`, eventVal: String(k) });
      const seen: string[] = [];
      const sizes: number[] = [];
      let cursor: string | null = null;
      do {
        const r: Reply<BodyOf<'listLearnEvents'>> = await list(m, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(r.status).to.equal(200);
        sizes.push(r.body.items.length);
        seen.push(...r.body.items.map((e) => e.event_name));
        cursor = r.body.next_cursor;
      } while (cursor);
      expect(sizes).to.deep.equal([2, 2, 1]);
      expect(seen).to.deep.equal(['e4', 'e3', 'e2', 'e1', 'e0']);

      const first = await list(m, '?limit=2');
      const other = await newMerchant(srv, acme);
      const replayed = await list<PlatformError>(other, `?cursor=${first.body.next_cursor}`);
      expect(replayed.status).to.equal(400);
      expect(replayed.body.code).to.equal(4000);
      const bad = await list<PlatformError>(m, '?cursor=not-a-cursor');
      expect(bad.status).to.equal(400);
      expect(bad.body.code).to.equal(4000);
      for (const limit of ['0', '201', 'x']) expect((await list(m, `?limit=${limit}`)).status, limit).to.equal(400);
    });

    it('shows each organisation only its own events', async () => {
      const a = await newMerchant(srv, acme);
      const b = await newMerchant(srv, acme);
      await learn(srv, { org_token: a.organisation.token, eventName: 'only-a', eventVal: 'x' });
      await learn(srv, { org_token: b.organisation.token, eventName: 'only-b', eventVal: 'x' });
      expect((await list(a)).body.items.map((e: { event_name: string }) => e.event_name)).to.deep.equal(['only-a']);
      expect((await list(b)).body.items.map((e: { event_name: string }) => e.event_name)).to.deep.equal(['only-b']);
    });

    it('answers 403/4030 for an organisation not assigned to the caller (another account, another platform, or none)', async () => {
      const m = await newMerchant(srv, acme);
      await learn(srv, { org_token: m.organisation.token, eventName: 'secret', eventVal: 'x' });
      const rival = await newAccount(srv, 'acme');
      const other = await newAccount(srv, 'globex');
      for (const account of [rival, other]) {
        const r = await list<PlatformError>(m, '', account);
        expect(r.status, account.platform).to.equal(403);
        expect(r.body.code).to.equal(4030);
      }
      const missing = await srv.api.get<PlatformError>('/v1/rest/acme/organisations/987654321/learn-events', { token: acme.token });
      expect(missing.status).to.equal(403);
      expect(missing.body.code).to.equal(4030);
    });

    it("requires a bearer token of the path's platform (401/4010)", async () => {
      const m = await newMerchant(srv, acme);
      const none = await srv.api.get<PlatformError>(`/v1/rest/acme/organisations/${m.organisation.id}/learn-events`);
      expect(none.status).to.equal(401);
      expect(none.body.code).to.equal(4010);
      const other = await newAccount(srv, 'globex');
      const wrong = await srv.api.get<PlatformError>(`/v1/rest/acme/organisations/${m.organisation.id}/learn-events`, { token: other.token });
      expect(wrong.status).to.equal(401);
      expect(wrong.body.code).to.equal(4010);
      const bad = await srv.api.get<PlatformError>(`/v1/rest/acme/organisations/${m.organisation.id}/learn-events`, { token: 'not.a.jwt' });
      expect(bad.status).to.equal(401);
    });
  });
});
