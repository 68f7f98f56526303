// Two Trackway instances (each with its own pool, ingest queue, caches and
// dispatcher) behind one database: ingestion and dispatch are shared
// correctly — every acknowledged event stored once, identities stitched
// across instances, every notification sent exactly once.
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { createDb } from '../../src/db/database.ts';
import { createLogger } from '../../src/log.ts';
import { type RunningServer, startOnDatabase } from '../../src/server.ts';
import { ApiClient, type BodyOf } from '../support/client.ts';
import { freshDatabase, type TestDatabase } from '../support/harness.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type Account, newAccount, newMerchant, newWebhook, unique } from '../support/accounts.ts';
import { b64url } from '../support/payload.ts';

describe('two instances on one database', function () {
  this.timeout(60_000);
  let database: TestDatabase;
  const instances: { running: RunningServer; api: ApiClient; close(): Promise<void> }[] = [];
  let receiver: TestReceiver;

  before(async () => {
    database = await freshDatabase();
    receiver = await TestReceiver.start(() => ({ status: 204 }));
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      TRACKWAY_DATA_DIR: `/tmp/trackway-test-data-${process.pid}`,
      TRACKWAY_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
      LOG_LEVEL: 'silent',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      GEOIP_DB: 'off',
    });
    for (let i = 0; i < 2; i++) {
      const handle = createDb(database.url, { max: 10, onError: () => {} });
      const running = await startOnDatabase(config, handle, createLogger('silent'), { dispatcher: true });
      instances.push({
        running,
        api: new ApiClient(running.url),
        close: async () => {
          await running.close();
          await handle.close();
        },
      });
    }
  });
  after(async () => {
    for (const i of instances) await i.close();
    await receiver.close();
    await database.drop();
  });

  it('shares ingestion and dispatch without loss or double sends', async () => {
    const [a, b] = instances as [(typeof instances)[0], (typeof instances)[0]];
    // platform work through instance A, tracking through both
    const srvA = { ...a.running, api: a.api } as never;
    const account: Account = await newAccount(srvA);
    // the product URLs below are under the organisation's own domain
    const org = (await newMerchant(srvA, account, { domain: 'two.example' })).organisation.id;
    await newWebhook(srvA, account, org, { endpoint: receiver.url, do_events: true, do_contacts: true });

    const visitors = Array.from({ length: 20 }, (_, i) => ({ core: unique('v'), email: `p${i}@two.example` }));
    // each visitor identifies on one instance…
    await Promise.all(visitors.map((v, i) => instances[i % 2]!.api.get(`/jsv1/identify/${org}/r/${v.core}/${b64url({ email: v.email })}`)));
    // …and a second device of the same person (same corex_id) shows up on the other
    const corexOf = (i: number) => `cx-${i}`;
    await Promise.all(
      visitors.map((v, i) => instances[(i + 1) % 2]!.api.post(`/jsv1/${org}/r/${v.core}/${corexOf(i)}/event/view`, { page: 'https://two.example/' })),
    );
    // then 10 events per visitor from second devices, spread over both instances concurrently
    const sends: Promise<{ status: number }>[] = [];
    for (let round = 0; round < 10; round++) {
      visitors.forEach((v, i) => {
        const other = `${v.core}-phone`;
        sends.push(
          instances[(i + round) % 2]!.api.post(`/jsv1/${org}/r/${other}/${corexOf(i)}/event/productview`, {
            product_id: round,
            price: 1,
            product_url: `https://two.example/p/${round}`,
          }),
        );
      });
    }
    const replies = await Promise.all(sends);
    expect(replies.every((r) => r.status === 202)).to.equal(true);

    const db = database.handle.db;
    const events = await db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', org)
      .executeTakeFirstOrThrow();
    expect(Number(events.n)).to.equal(visitors.length * 11);

    // each phone was stitched to its person by corex_id, whichever instance saw it first
    for (const v of visitors.slice(0, 5)) {
      const r = await b.api.get<BodyOf<'getVisitor'>>(`/v1/rest/${account.platform}/organisations/${org}/visitors/${v.core}-phone`, {
        token: account.token,
      });
      expect(r.body.contacts.map((c: { value: string }) => c.value)).to.deep.equal([v.email]);
      // the rounds were sent concurrently, so which three came last is up to the network
      expect(new Set(r.body.recent.last_view).size).to.equal(3);
      for (const url of r.body.recent.last_view) expect(url).to.match(/^https:\/\/two\.example\/p\/\d$/);
    }

    // notifications: 20 matches + 20 × 11 event exports, each sent exactly once by one of the dispatchers
    const due = visitors.length + visitors.length * 11;
    await receiver.waitFor(due, 30_000);
    // a double send would arrive late: identify one more visitor on each instance and wait for
    // those two later notifications, so both dispatchers have claimed past the earlier ones
    const markers = await Promise.all(
      instances.map((inst, i) => inst.api.get(`/jsv1/identify/${org}/r/${unique('marker')}/${b64url({ email: `marker${i}@two.example` })}`)),
    );
    expect(markers.map((r) => r.status)).to.deep.equal([200, 200]);
    await receiver.waitFor(due + 2, 30_000);
    const ids = receiver.requests.map((r) => r.headers['webhook-id']);
    expect(ids).to.have.length(due + 2);
    expect(new Set(ids).size).to.equal(due + 2);
  });
});
