// Identity verification: the identify payload's `hash`, HMAC-SHA256
// of the normalised email (or phone) keyed with the organisation's identity
// secret. With `required`, both forms of the reported attack fail end to end:
// identifying as a customer's email without the hash (403, nothing stored),
// and guessing the customer's corex_id (not attached; its activity never
// reaches the customer's notifications). With `optional` (the default), the
// seed's flows are unchanged and verified links are marked.
import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { hashMatches, identityHash, verifyIdentify } from '../../src/identity/verification.rules.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type Account, newAccount, unique } from '../support/accounts.ts';
import { footprint, newShop, PHISH, type Shop, storedDeliveries } from '../support/trust.ts';
import { testOrgId } from '../support/org-id.ts';
import type { TrackingError, BodyOf } from '../support/client.ts';

/** What the shop's server runs (README): the key is the secret's 64 characters as they are. */
const hashOf = (secret: string, value: string) => createHmac('sha256', secret).update(value.trim().toLowerCase()).digest('hex');

describe('identity verification', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let receiver: TestReceiver;
  let account: Account;
  before(async () => {
    receiver = await TestReceiver.start(() => ({ status: 204 }));
    srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: '200ms' }, { dispatcher: true });
    account = await newAccount(srv);
  });
  after(async () => {
    await srv?.stop();
    await receiver?.close();
  });

  const matches = async (shop: Shop) => (await storedDeliveries(srv, shop.orgId)).filter((d) => d.kind === 'matched').map((d) => d.body);

  describe('the hash', () => {
    it('is the documented HMAC (a known answer computed outside Node), compared in constant time', () => {
      const secret = '5c1e0f3a9b7d24e68f0a1c3e5b7d9f2a4c6e8b0d1f3a5c7e9b2d4f6a8c0e1b3d';
      // python3 -c "import hmac,hashlib;print(hmac.new(SECRET.encode(),b'jane.doe@example.com',hashlib.sha256).hexdigest())"
      const expected = '7ac2622672a3029ec88cf196c20d131f98770ab3746adbd1ed4b0442f4c85332';
      expect(identityHash(secret, 'jane.doe@example.com')).to.equal(expected);
      expect(hashMatches(secret, 'jane.doe@example.com', expected)).to.equal(true);
      expect(hashMatches(secret, 'jane.doe@example.com', expected.toUpperCase())).to.equal(true);
      for (const wrong of [expected.slice(0, -1), `${expected}0`, expected.replace(/^7/, '8'), '', 'zz'.repeat(32)]) {
        expect(hashMatches(secret, 'jane.doe@example.com', wrong), wrong).to.equal(false);
      }
    });

    it('covers the email, else the phone; under `required` a phone beside a hashed email is dropped', () => {
      const secret = 'f'.repeat(64);
      const policy = (mode: 'optional' | 'required') => ({ orgId: testOrgId(1), identityVerification: mode, identitySecret: secret });
      const email = identityHash(secret, 'jane@example.com');
      const phone = identityHash(secret, '+442079460958');
      expect(verifyIdentify(policy('optional'), { email: ' Jane@Example.com ', phone: '+44 20 7946 0958', hash: email }).contacts).to.deep.equal([
        { type: 'EMAIL', value: 'jane@example.com', verified: true },
        { type: 'PHONE', value: '+442079460958', verified: false },
      ]);
      expect(verifyIdentify(policy('required'), { email: 'jane@example.com', phone: '+44 20 7946 0958', hash: email }).contacts).to.deep.equal([
        { type: 'EMAIL', value: 'jane@example.com', verified: true },
      ]);
      expect(verifyIdentify(policy('required'), { phone: '+44 (20) 7946-0958', hash: phone }).contacts).to.deep.equal([
        { type: 'PHONE', value: '+442079460958', verified: true },
      ]);
      // a phone hash does not cover an email that is sent with it
      expect(() => verifyIdentify(policy('optional'), { email: 'jane@example.com', phone: '+442079460958', hash: phone })).to.throw(
        /does not match the email/,
      );
      expect(() => verifyIdentify(policy('optional'), { name: 'Jane', hash: email })).to.throw(/neither/);
      expect(() => verifyIdentify({ ...policy('optional'), identitySecret: null }, { email: 'jane@example.com', hash: email })).to.throw(
        /does not match/,
      );
    });
  });

  describe('optional (the default)', () => {
    it('links without a hash as before (unverified), marks a link made with a valid hash verified, and refuses a wrong one', async () => {
      const shop = await newShop(srv, account, receiver);
      const { identity_secret: secret, identity_verification } = await shop.read();
      expect(identity_verification).to.equal('optional');
      const plain = shop.visitor();
      expect((await plain.identify({ email: 'plain@example.com' })).status).to.equal(200);
      const signed = shop.visitor();
      const ok = await signed.identify({ email: ' Signed@Example.com', name: 'Signe', hash: hashOf(secret, 'signed@example.com') });
      expect(ok.status, ok.text).to.equal(200);
      expect(ok.body).to.deep.equal({ core_id: signed.core });
      const forged = shop.visitor();
      const bad = await forged.identify<TrackingError>({ email: 'plain@example.com', hash: hashOf('0'.repeat(64), 'plain@example.com') });
      expect(bad.status, bad.text).to.equal(403);
      expect(bad.body.error).to.equal('unverified_identity');
      expect(await footprint(srv, shop.orgId, forged.core)).to.deep.equal({ visitors: 0, links: 0, events: 0 });

      expect((await plain.read()).contacts).to.deep.equal([{ type: 'EMAIL', value: 'plain@example.com', verified: false }]);
      expect((await signed.read()).contacts).to.deep.equal([{ type: 'EMAIL', value: 'signed@example.com', verified: true }]);
      await shop.drained();
      expect((await matches(shop)).map((b) => [b.contact, b.verified])).to.deep.equal([
        ['plain@example.com', false],
        ['signed@example.com', true],
      ]);
      const received = shop.received().filter((b) => b.medium === 'matched');
      expect(received.find((b) => b.contact === 'signed@example.com')).to.include({ verified: true });
    });

    it('upgrades an existing link when the visitor identifies again with a valid hash, without a new notification', async () => {
      const shop = await newShop(srv, account, receiver);
      const { identity_secret: secret } = await shop.read();
      const v = shop.visitor();
      expect((await v.identify({ email: 'later@example.com' })).status).to.equal(200);
      expect((await v.read()).contacts[0]!.verified).to.equal(false);
      expect((await v.identify({ email: 'later@example.com', hash: hashOf(secret, 'later@example.com') })).status).to.equal(200);
      expect((await v.read()).contacts).to.deep.equal([{ type: 'EMAIL', value: 'later@example.com', verified: true }]);
      expect(await matches(shop)).to.have.length(1);
    });
  });

  describe('required', () => {
    let shop: Shop;
    let secret: string;
    let victim: ReturnType<Shop['visitor']>;
    const corex = unique('cust-1001');

    before(async () => {
      shop = await newShop(srv, account, receiver);
      const r = await shop.settings({ identity_verification: 'required' });
      expect(r.status, r.text).to.equal(200);
      expect(r.body.identity_verification).to.equal('required');
      secret = r.body.identity_secret;
      // the real customer, signed in on the shop: its events carry the shop's customer id, its identify a hash
      victim = shop.visitor(unique('real'), corex);
      expect((await victim.track('productview', { product_id: 1001, price: 59.9, product_url: shop.url('/products/linen-shirt') })).status).to.equal(
        202,
      );
      expect((await victim.track('updatecart', { product_id: 1001, cart_url: shop.url('/cart') })).status).to.equal(202);
      const id = await victim.identify({ email: 'BUYER@example.com', hash: hashOf(secret, 'buyer@example.com') });
      expect(id.status, id.text).to.equal(200);
    });

    it('accepts a correct hash and marks the link and the notification verified', async () => {
      expect((await victim.read()).contacts).to.deep.equal([{ type: 'EMAIL', value: 'buyer@example.com', verified: true }]);
      await shop.drained();
      expect(shop.received().find((b) => b.medium === 'matched')).to.include({
        contact: 'buyer@example.com',
        verified: true,
        last_addtocart: shop.url('/products/linen-shirt'),
      });
    });

    it('refuses the email form of the attack with 403 unverified_identity and stores nothing at all', async () => {
      const before = await storedDeliveries(srv, shop.orgId);
      const atk = shop.visitor('atk');
      const payloads: Record<string, string>[] = [
        { email: 'BUYER@example.com' },
        { email: 'BUYER@example.com', hash: hashOf('0'.repeat(64), 'buyer@example.com') },
        { email: 'BUYER@example.com', hash: hashOf(secret, 'attacker@evil.example') },
        { email: 'BUYER@example.com', hash: 'not-a-hash' },
        { phone: '+1 555 0100', name: 'Mallory' },
        { name: 'Mallory' },
      ];
      for (const payload of payloads) {
        const r = await atk.identify<TrackingError>(payload);
        expect(r.status, `${JSON.stringify(payload)}: ${r.text}`).to.be.oneOf([400, 403]);
        if (r.status === 403) expect(r.body.error).to.equal('unverified_identity');
      }
      // no visitor row, no contact, no link, no event, no notification
      expect(await footprint(srv, shop.orgId, 'atk')).to.deep.equal({ visitors: 0, links: 0, events: 0 });
      const contacts = await srv.deps.db.selectFrom('contacts').select('value').where('org_id', '=', shop.orgId).execute();
      expect(contacts.map((c) => c.value)).to.deep.equal(['buyer@example.com']);
      expect(await storedDeliveries(srv, shop.orgId)).to.deep.equal(before);
    });

    it('refuses the reported sequence: the phishing cart is stored as an event only, the identify is refused, nothing reaches the customer', async () => {
      const r = await srv.api.post(`/jsv1/${shop.orgId}/r-h/atk2/null/event/updatecart`, { product_id: 1001, cart_url: PHISH });
      expect(r.status).to.equal(202);
      const id = await shop.visitor('atk2').identify({ email: 'BUYER@example.com' });
      expect(id.status).to.equal(403);
      expect(await footprint(srv, shop.orgId, 'atk2')).to.deep.equal({ visitors: 1, links: 0, events: 1 });
      // a new device of the customer, verified: its match carries the customer's own activity only
      const phone = shop.visitor(unique('phone'), corex);
      expect((await phone.identify({ email: 'buyer@example.com', hash: hashOf(secret, 'buyer@example.com') })).status).to.equal(200);
      await shop.drained();
      const last = (await matches(shop)).at(-1)!;
      expect(last).to.include({ contact: 'buyer@example.com', verified: true, last_addtocart: shop.url('/products/linen-shirt') });
      for (const body of shop.received()) expect(JSON.stringify(body)).to.not.include('phish.attacker.example');
    });

    it('does not attach a visitor that guesses the customer’s corex_id, verified as itself or not; its activity never reaches the customer', async () => {
      const marker = shop.url(`/products/attacker-marker-${unique('m')}`);
      const mallory = shop.visitor(unique('mallory'), corex);
      expect((await mallory.track('productview', { product_id: 666, price: 1, product_url: marker })).status).to.equal(202);
      expect((await mallory.track('updatecart', { product_id: 666, cart_url: marker })).status).to.equal(202);
      // even a real account of the shop (a valid hash for its own email) does not get in through corex_id
      const own = await mallory.identify({ email: 'mallory@evil.example', hash: hashOf(secret, 'mallory@evil.example') });
      expect(own.status, own.text).to.equal(200);
      // (her own product: the product catalogue is the organisation's, shared by design, see README "Trust")
      expect((await mallory.track('buy', { order_id: 'o-666', items: [{ product_id: 666, product_url: marker }] })).status).to.equal(202);

      // two persons: the customer's and Mallory's
      const persons = await srv.deps.db
        .selectFrom('visitors')
        .select(['core_id', 'person_id'])
        .where('org_id', '=', shop.orgId)
        .where('core_id', 'in', [victim.core, mallory.core])
        .execute();
      expect(new Set(persons.map((p) => p.person_id)).size).to.equal(2);
      expect((await victim.read()).contacts.map((c) => c.value)).to.deep.equal(['buyer@example.com']);
      expect((await mallory.read()).contacts.map((c) => c.value)).to.deep.equal(['mallory@evil.example']);
      expect(JSON.stringify((await victim.read()).recent)).to.not.include('attacker-marker');

      // the customer's next match (a new verified link) and every export: nothing of Mallory's
      const tablet = shop.visitor(unique('tablet'), corex);
      expect((await tablet.identify({ email: 'buyer@example.com', hash: hashOf(secret, 'buyer@example.com') })).status).to.equal(200);
      await shop.drained();
      for (const body of shop.received().filter((b) => b.contact === 'buyer@example.com')) {
        expect(JSON.stringify(body)).to.not.include('attacker-marker');
      }
      const exportsToCustomer = shop.received().filter((b) => b.medium === 'event' && b.contact === 'buyer@example.com');
      const exportsToMallory = shop.received().filter((b) => b.medium === 'event' && b.contact === 'mallory@evil.example');
      expect(exportsToCustomer, 'the customer’s contact never receives Mallory’s events').to.have.length(0);
      expect(exportsToMallory.map((b) => b.event)).to.deep.equal(['buy']);
    });

    it('stops accepting hashes made with the old secret once it is rotated', async () => {
      const old = secret;
      const rotated = await srv.api.post<BodyOf<'rotateIdentitySecret'>>(
        `/v1/rest/${account.platform}/organisations/${shop.orgId}/identity-secret/rotate`,
        undefined,
        {
          token: account.token,
        },
      );
      expect(rotated.status, rotated.text).to.equal(200);
      const fresh = rotated.body.identity_secret;
      expect(fresh)
        .to.match(/^[0-9a-f]{64}$/)
        .and.not.equal(old);
      const v = shop.visitor();
      const refused = await v.identify<TrackingError>({ email: 'buyer@example.com', hash: hashOf(old, 'buyer@example.com') });
      expect(refused.status).to.equal(403);
      expect(refused.body.error).to.equal('unverified_identity');
      expect((await v.identify({ email: 'buyer@example.com', hash: hashOf(fresh, 'buyer@example.com') })).status).to.equal(200);
      secret = fresh;
    });

    it('is documented for receivers on /docs/webhooks', async () => {
      const page = await srv.api.get('/docs/webhooks', { unchecked: true });
      expect(page.text).to.include('<code>verified</code> is <code>true</code> when the shop');
      expect(page.text).to.include('"verified": true');
    });

    it('goes back to today’s behaviour when set to optional again (earlier links stay as they were)', async () => {
      expect((await shop.settings({ identity_verification: 'optional' })).status).to.equal(200);
      const v = shop.visitor();
      expect((await v.identify({ email: 'walk-in@example.com' })).status).to.equal(200);
      expect((await v.read()).contacts).to.deep.equal([{ type: 'EMAIL', value: 'walk-in@example.com', verified: false }]);
      expect((await victim.read()).contacts).to.deep.equal([{ type: 'EMAIL', value: 'buyer@example.com', verified: true }]);
    });
  });
});
