// One canonical address per client (issue 22, point 3). The attack as
// reported, with TRUST_PROXY=true: after 198.51.100.99 had used up its
// budget, `198.51.100.099`, `198.51.100.99:80`, `::ffff:c633:6463` and
// `0:0:0:0:0:ffff:…` each got a fresh bucket, and 100 /64s of one /48 got
// 100 fresh identify budgets. Each spelling is replayed against the fast
// path and the Koa path (TRACKWAY_FAST_PATH=false), and against login's
// failure counters, and shown to land in the one bucket; what is not an IP
// address is refused with 400 in the area's error body, storing nothing.
import { expect } from 'chai';
import { canonicalIp, clientAddressKey, networkKey } from '../../src/http/client-address.ts';
import { ensurePlatformAccount } from '../../src/platform/accounts.service.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { newAccount, newMerchant } from '../support/accounts.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { TrackingError } from '../support/client.ts';

/** Every spelling of 198.51.100.99 the report used, and a few more. */
const SPELLINGS = [
  '198.51.100.099',
  '198.51.100.99:80',
  '::ffff:c633:6463',
  '0:0:0:0:0:ffff:c633:6463',
  '::ffff:198.51.100.99',
  '0:0:0:0:0:FFFF:198.51.100.99',
  '[::ffff:c633:6463]:443',
  ' 198.51.100.99 ',
];

/** What is not an IP address, in the last X-Forwarded-For entry. */
const NOT_ADDRESSES = [
  'unknown',
  'shop.example.com',
  '198.51.100',
  '198.51.100.256',
  '3325256803',
  '0xc6.0x33.0x64.0x63',
  '198.51.100.99, ',
  '::ffff:zz',
  '1::2::3',
  '[198.51.100.99]',
  '198.51.100.99:http',
];

describe('one canonical address per client (issue 22, point 3)', function () {
  this.timeout(60_000);

  describe('the canonical form', () => {
    it('folds every spelling of one address to one text and one key', () => {
      for (const s of SPELLINGS) {
        expect(canonicalIp(s), s).to.equal('198.51.100.99');
        expect(clientAddressKey(s), s).to.equal('198.51.100.99');
        expect(networkKey(s), `${s} is IPv4: no /48`).to.equal(undefined);
      }
      // IPv6 as RFC 5952 writes it: lower case, no leading zeros, the first longest zero run as ::, no brackets, port or zone
      const v6 = ['2001:DB8:0:0:0:0:0:1', '2001:0db8::0001', '[2001:db8::1]:8443', '2001:db8:0::1%eth0', '2001:db8::0:1'];
      for (const s of v6) expect(canonicalIp(s), s).to.equal('2001:db8::1');
      expect(canonicalIp('2001:db8:0:0:1:0:0:1')).to.equal('2001:db8::1:0:0:1');
      expect(canonicalIp('2001:db8:0:1:1:1:1:1'), 'one zero group is not shortened').to.equal('2001:db8:0:1:1:1:1:1');
      expect(canonicalIp('::')).to.equal('::');
      expect(canonicalIp('::1')).to.equal('::1');
      // an IPv6 address counts by its /64, new identities also by its /48
      expect(clientAddressKey('2001:db8:1:2:aaaa::1')).to.equal('2001:db8:1:2::/64');
      expect(clientAddressKey('2001:0DB8:0001:0002:ffff::9')).to.equal('2001:db8:1:2::/64');
      expect(networkKey('2001:db8:1:2:aaaa::1')).to.equal('2001:db8:1::/48');
      expect(networkKey('2001:db8:1:ffff::1')).to.equal('2001:db8:1::/48');
      for (const s of NOT_ADDRESSES) expect(canonicalIp(s), s === '198.51.100.99, ' ? 'a list is not an address' : s).to.equal(undefined);
    });

    it('answers the same for an address it remembers, has forgotten, or never kept (the recent-address memo)', () => {
      const texts = [...SPELLINGS, ...NOT_ADDRESSES, '2001:db8:1:2:aaaa::1', `198.51.100.99${' '.repeat(80)}`, 'x'.repeat(200)];
      const answers = () => texts.map((s) => [canonicalIp(s), clientAddressKey(s), networkKey(s)]);
      const first = answers();
      expect(answers(), 'asked again, from the memo').to.deep.equal(first);
      // 5,000 other clients: more than both generations of the memo hold, so the first texts are forgotten
      for (let i = 0; i < 5_000; i++) {
        const ip = `203.0.${i >> 8}.${i & 255}`;
        expect(canonicalIp(ip)).to.equal(ip);
        expect(clientAddressKey(`2001:db8:${i.toString(16)}::1`)).to.equal(`2001:db8:${i.toString(16)}:0::/64`);
      }
      expect(answers(), 'asked again after being forgotten').to.deep.equal(first);
      expect(first[SPELLINGS.length + NOT_ADDRESSES.length + 2], 'too long to be kept: still not an address').to.deep.equal([
        undefined,
        'x'.repeat(200),
        undefined,
      ]);
      expect(first[SPELLINGS.length + NOT_ADDRESSES.length + 1]![0], 'padded with spaces: still the address').to.equal('198.51.100.99');
    });
  });

  for (const fastPath of [true, false]) {
    describe(`over HTTP, ${fastPath ? 'the fast path' : 'the Koa path (TRACKWAY_FAST_PATH=false)'}`, () => {
      let srv: TestServer;
      let orgId: OrgId;
      let seq = 0;
      const event = (ip: string) =>
        srv.api.post<TrackingError>(
          `/jsv1/${orgId}/r-${++seq}/c-${seq}/null/event/view`,
          { page: 'https://shop.example.com/' },
          { headers: { 'x-forwarded-for': ip } },
        );
      const identify = (ip: string, email: string) =>
        srv.api.get<TrackingError>(`/jsv1/identify/${orgId}/r-${++seq}/c-${seq}/${b64url({ email })}`, { headers: { 'x-forwarded-for': ip } });

      before(async () => {
        srv = await startTestServer({
          TRUST_PROXY: 'true',
          TRACKWAY_FAST_PATH: String(fastPath),
          TRACKING_IP_RATE_LIMIT: '4/1m',
          TRACKING_ORG_RATE_LIMIT: 'off',
          TRACKING_IDENTIFY_RATE_LIMIT: '3/1m',
          TRACKING_IDENTIFY_NETWORK_RATE_LIMIT: '20/1m',
        });
        const account = await newAccount(srv);
        orgId = (await newMerchant(srv, account)).organisation.id;
      });
      after(() => srv.stop());

      it('gives every spelling of an address the one bucket that address used up', async () => {
        for (let i = 0; i < 4; i++) expect((await event('198.51.100.99')).status).to.equal(202);
        expect((await event('198.51.100.99')).status).to.equal(429);
        for (const s of SPELLINGS) {
          const r = await event(s);
          expect(r.status, `${s}: ${r.text}`).to.equal(429);
          expect(r.body).to.include({ error: 'rate_limited' });
        }
        // another address still has its own
        expect((await event('198.51.100.98')).status).to.equal(202);
      });

      it('refuses what is not an IP address with 400 in the tracking body, storing nothing', async () => {
        const before = await srv.deps.db
          .selectFrom('events')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('org_id', '=', orgId)
          .executeTakeFirstOrThrow();
        for (const s of NOT_ADDRESSES) {
          for (const r of [await event(s), await identify(s, 'who@example.com')]) {
            expect(r.status, `${s}: ${r.text}`).to.equal(400);
            expect(r.body.error, s).to.equal('invalid_request');
            expect(r.body.message).to.match(/X-Forwarded-For/);
          }
        }
        const after = await srv.deps.db
          .selectFrom('events')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('org_id', '=', orgId)
          .executeTakeFirstOrThrow();
        expect(Number(after.n)).to.equal(Number(before.n));
        const contacts = await srv.deps.db
          .selectFrom('contacts')
          .select('id')
          .where('org_id', '=', orgId)
          .where('value', '=', 'who@example.com')
          .execute();
        expect(contacts).to.have.length(0);
      });

      it('limits new identities per /48 too: 100 /64s of one /48 share one coarser budget', async () => {
        let accepted = 0;
        let refused = 0;
        for (let i = 0; i < 100; i++) {
          const r = await identify(`2001:db8:77:${i.toString(16)}::1`, `n${i}-${seq}@example.com`);
          if (r.status === 200) accepted++;
          else {
            expect(r.status, r.text).to.equal(429);
            expect(r.headers.get('retry-after')).to.match(/^\d+$/);
            refused++;
          }
        }
        console.log(
          `      client-address figures (${fastPath ? 'fast path' : 'Koa path'}): 100 /64s of one /48, one new identity each: ${accepted} accepted, ${refused} refused (per /64 3/1m, per /48 20/1m)`,
        );
        expect(accepted, 'the /48 budget, not 100 × the /64 budget').to.equal(20);
        // another /48 is not affected, and neither are IPv4 clients
        expect((await identify('2001:db8:78::1', `other-${seq}@example.com`)).status).to.equal(200);
        expect((await identify('203.0.113.7', `v4-${seq}@example.com`)).status).to.equal(200);
        // one /64 still has its own, smaller budget
        for (let i = 0; i < 3; i++) expect((await identify(`2001:db8:79::${i + 1}`, `s${i}-${seq}@example.com`)).status).to.equal(200);
        expect((await identify('2001:db8:79::ff', `s9-${seq}@example.com`)).status).to.equal(429);
      });
    });
  }

  describe('login failures', () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer({ TRUST_PROXY: 'true', LOGIN_ADDRESS_RATE_LIMIT: '3/15m' });
    });
    after(() => srv.stop());

    it('counts every spelling of an address against that address, and stores only the canonical one', async () => {
      const emails = [0, 1, 2, 3, 4].map((i) => `acct${i}-${Date.now()}@platform.example`);
      for (const email of emails) await ensurePlatformAccount(srv.deps, { platform: 'acme', email, password: 'correct horse battery', name: 'A' });
      const login = (email: string, ip: string) =>
        srv.api.post('/v1/rest/acme/users/login', { email, password: 'wrong password!' }, { headers: { 'x-forwarded-for': ip } });
      expect((await login(emails[0]!, '198.51.100.99')).status).to.equal(401);
      expect((await login(emails[1]!, '198.51.100.099')).status).to.equal(401);
      expect((await login(emails[2]!, '::ffff:c633:6463')).status).to.equal(401);
      const r = await login(emails[3]!, '0:0:0:0:0:ffff:c633:6463');
      expect(r.status, 'the fourth failure from the one address').to.equal(429);
      expect(r.body).to.include({ code: 4290 });
      const keys = (await srv.deps.db.selectFrom('login_failures').select('key').execute()).map((k) => k.key);
      expect(keys.filter((k) => k.startsWith('ip:'))).to.deep.equal(['ip:198.51.100.99']);
      // the address part of each key (the emails hold a timestamp, which may well contain "099")
      const addresses = keys.map((k) => k.slice(k.lastIndexOf('|') + 1).replace(/^ip:/, ''));
      expect(addresses, keys.join(' ')).to.deep.equal(addresses.map(() => '198.51.100.99'));
      // and an X-Forwarded-For that is not an address: 400 in the platform's body, nothing counted
      const bad = await login(emails[4]!, 'unknown');
      expect(bad.status).to.equal(400);
      expect(bad.body).to.include({ code: 4000 });
      expect((await srv.deps.db.selectFrom('login_failures').select('key').execute()).map((k) => k.key)).to.have.length(keys.length);
    });
  });
});
