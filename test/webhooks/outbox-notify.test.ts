// The transactional outbox's wake-up (src/webhooks/outbox.repository.ts):
// enqueueDeliveries writes a batch's deliveries and the NOTIFY naming their
// organisations in one statement. PostgreSQL sends the notification when the
// transaction commits, to the connection the dispatchers LISTEN on (on a
// Citus cluster, the coordinator's), and never for a batch rolled back.
import { expect } from 'chai';
import pg from 'pg';
import { DELIVERIES_CHANNEL } from '../../src/db/notifications.ts';
import type { OrgId } from '../../src/db/tenancy.ts';
import { enqueueDeliveries } from '../../src/webhooks/outbox.repository.ts';
import { type Account, newAccount, newMerchant, newWebhook } from '../support/accounts.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { eventually, sleep } from '../support/webhook-fixtures.ts';

describe('webhooks: the outbox wakes the dispatchers when its transaction commits', () => {
  let srv: TestServer;
  let acme: Account;
  let listener: pg.Client;
  const heard: string[] = [];

  before(async () => {
    srv = await startTestServer();
    acme = await newAccount(srv, 'acme');
    listener = new pg.Client({ connectionString: srv.database.url });
    await listener.connect();
    listener.on('notification', (n) => {
      if (n.channel === DELIVERIES_CHANNEL) heard.push(n.payload ?? '');
    });
    await listener.query(`LISTEN ${DELIVERIES_CHANNEL}`);
  });
  after(async () => {
    await listener.end();
    await srv.stop();
  });

  async function integrationOf(): Promise<{ orgId: OrgId; integrationId: number }> {
    const orgId = (await newMerchant(srv, acme)).organisation.id;
    const integration = await newWebhook(srv, acme, orgId);
    return { orgId, integrationId: integration.id };
  }

  const delivery = (orgId: OrgId, integrationId: number, contact: string) => ({
    orgId,
    integrationId,
    kind: 'event' as const,
    body: JSON.stringify({ medium: 'event', contact }),
    contact,
  });

  function deliveriesOf(orgId: OrgId) {
    return srv.database.handle.db.selectFrom('deliveries').select(['contact', 'status']).where('org_id', '=', orgId).orderBy('id').execute();
  }

  it('writes the deliveries in the order given and names their organisations once, only after the commit', async () => {
    const a = await integrationOf();
    const b = await integrationOf();
    await srv.database.handle.db.transaction().execute(async (tx) => {
      await enqueueDeliveries(tx, [
        delivery(a.orgId, a.integrationId, 'one@example.com'),
        delivery(b.orgId, b.integrationId, 'two@example.com'),
        delivery(a.orgId, a.integrationId, 'three@example.com'),
      ]);
      // nothing is sent while the transaction is open
      await sleep(150);
      expect(heard.filter((p) => p.split(',').includes(String(a.orgId)))).to.deep.equal([]);
    });
    const payload = await eventually(() => heard.find((p) => p.split(',').includes(String(a.orgId))), 5_000, 'the NOTIFY of the batch');
    expect(payload).to.equal(`${a.orgId},${b.orgId}`);
    expect(await deliveriesOf(a.orgId)).to.deep.equal([
      { contact: 'one@example.com', status: 'pending' },
      { contact: 'three@example.com', status: 'pending' },
    ]);
    expect(await deliveriesOf(b.orgId)).to.deep.equal([{ contact: 'two@example.com', status: 'pending' }]);
  });

  it('a batch rolled back leaves no delivery and wakes no one', async () => {
    const a = await integrationOf();
    const failed = srv.database.handle.db.transaction().execute(async (tx) => {
      await enqueueDeliveries(tx, [delivery(a.orgId, a.integrationId, 'gone@example.com')]);
      throw new Error('the batch failed after its deliveries');
    });
    const err = await failed.then(
      () => null,
      (e: unknown) => e,
    );
    expect(String(err)).to.include('the batch failed after its deliveries');
    // a later commit's NOTIFY is heard, so an earlier one would have been by now (delivered in commit order)
    const c = await integrationOf();
    await srv.database.handle.db.transaction().execute((tx) => enqueueDeliveries(tx, [delivery(c.orgId, c.integrationId, 'later@example.com')]));
    await eventually(() => heard.find((p) => p === String(c.orgId)), 5_000, 'the NOTIFY of the later batch');
    expect(heard.filter((p) => p.split(',').includes(String(a.orgId)))).to.deep.equal([]);
    expect(await deliveriesOf(a.orgId)).to.deep.equal([]);
  });
});
