// The k dispatchers of one `serve` host split its caps
// (src/webhooks/host-split.rules.ts): one integration never has more than
// WEBHOOK_CONCURRENCY requests in flight host-wide, a slow endpoint's
// reduced lane is the host's (split, not multiplied), and every delivery is
// sent once.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { OrgId } from '../../src/db/tenancy.ts';
import type { ClaimedDelivery } from '../../src/webhooks/claims.repository.ts';
import { Dispatcher } from '../../src/webhooks/dispatcher.worker.ts';
import { DEFAULT_SHARE, FairShare } from '../../src/webhooks/fair-share.rules.ts';
import { dispatchersFor, partOf, splitCaps } from '../../src/webhooks/host-split.rules.ts';
import { laneLimit, newLane } from '../../src/webhooks/lanes.rules.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { createIntegration, createTenant, enqueue, eventually, many } from '../support/webhook-fixtures.ts';

describe('dispatchers splitting a host’s caps', function () {
  this.timeout(60_000);

  it('gives each dispatcher a part of each cap, the parts summing to the cap', () => {
    for (const count of [1, 2, 3, 5])
      for (let total = count; total <= 40; total++) {
        const parts = Array.from({ length: count }, (_, i) => partOf(total, i, count));
        expect(
          parts.reduce((a, b) => a + b),
          `${total} over ${count}`,
        ).to.equal(total);
        expect(Math.min(...parts)).to.be.at.least(1);
      }
    const two = [0, 1].map((i) => splitCaps(DEFAULT_SHARE, i, 2));
    expect(two.map((s) => [s.perIntegration, s.global, s.reserve, s.perOrganisation])).to.deep.equal([
      [4, 256, 32, 224],
      [4, 256, 32, 224],
    ]);
  });

  it('splits a slow endpoint’s lane: the host’s dispatchers together send what one would', () => {
    const lane = newLane(7, 1 as OrgId);
    const limits: Record<number, number[]> = {};
    for (const ms of [1, 500, 2_000, 2_500, 4_000, 5_500, 8_000, 9_000, 16_000, 29_000, 60_000]) {
      lane.ewmaMs = ms;
      const host = laneLimit(lane, DEFAULT_SHARE);
      for (const k of [2, 3]) {
        const parts = Array.from({ length: k }, (_, i) => laneLimit(lane, splitCaps(DEFAULT_SHARE, i, k)));
        expect(
          parts.reduce((a, b) => a + b),
          `${ms} ms over ${k}`,
        ).to.equal(host);
        if (k === 2) limits[ms] = parts;
      }
    }
    // fast: 4 + 4; 4 s: 4 in all (2 + 2); 29 s: one request in flight, from one of them
    expect(limits[500]).to.deep.equal([4, 4]);
    expect(limits[4_000]).to.deep.equal([2, 2]);
    expect(limits[9_000]).to.deep.equal([1, 0]);
    expect(limits[29_000]).to.deep.equal([1, 0]);
  });

  it('leaves a slow endpoint to the dispatcher whose part it is: the other gives it no room and does not claim again for it', () => {
    const org = 1 as OrgId;
    const row = { org_id: org, id: 1, integration_id: 5, http_timeout: 30 } as ClaimedDelivery;
    const [first, second] = [0, 1].map((i) => new FairShare(splitCaps(DEFAULT_SHARE, i, 2)));
    for (const share of [first!, second!]) {
      const job = share.add(row, Date.now() + 60_000, false);
      expect(share.next(job.lane)).to.equal(job);
      share.finished(job, 29_000); // the endpoint answered after 29 s
      job.lane.more = true; // and had more due
      share.refresh();
    }
    const lanes = [first!, second!].map((s) => s.integrationRooms(org));
    // the host's one request in flight is the first dispatcher's; the second holds and claims none
    expect(lanes).to.deep.equal([[{ id: 5, room: 1 }], [{ id: 5, room: 0 }]]);
    expect(first!.anyClaimable()).to.equal(true);
    expect(second!.anyClaimable(), 'a claim round that can take nothing is not repeated at once').to.equal(false);
  });

  it('runs no more dispatchers than the smallest cap, so that no part is 0', () => {
    expect(dispatchersFor(2, undefined, DEFAULT_SHARE)).to.equal(2);
    expect(dispatchersFor(2, 1, DEFAULT_SHARE)).to.equal(1);
    expect(dispatchersFor(4, 3, DEFAULT_SHARE)).to.equal(3);
    expect(dispatchersFor(4, undefined, { ...DEFAULT_SHARE, perIntegration: 2 })).to.equal(2);
    expect(dispatchersFor(2, undefined, { ...DEFAULT_SHARE, perIntegration: 1 })).to.equal(1);
    expect(dispatchersFor(8, undefined, { ...DEFAULT_SHARE, global: 10, reserve: 7 })).to.equal(3);
  });

  describe('two dispatchers on one database', () => {
    let srv: TestServer;
    const running: Dispatcher[] = [];
    let server: http.Server | undefined;

    before(async () => {
      srv = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    });
    afterEach(async () => {
      await Promise.all(running.splice(0).map((d) => d.stop()));
      server?.closeAllConnections();
      await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    });
    after(() => srv.stop());

    it('never have more than WEBHOOK_CONCURRENCY requests in flight to one integration together, and send each delivery once', async () => {
      const P = srv.config.webhookShare.perIntegration;
      // the receiver counts the requests it has not answered yet; it holds them all until told otherwise
      let inFlight = 0;
      let most = 0;
      let hold = true;
      const held: (() => void)[] = [];
      const ids: string[] = [];
      server = http.createServer({ keepAliveTimeout: 10_000 }, (req, res) => {
        req.resume();
        req.on('end', () => {
          ids.push(String(req.headers['webhook-id']));
          most = Math.max(most, ++inFlight);
          const answer = () => {
            inFlight--;
            res.writeHead(204).end();
          };
          if (hold) held.push(answer);
          else setTimeout(answer, 2);
        });
      });
      await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const tenant = await createTenant(srv.deps.db, srv.deps.tokens);
      const hook = await createIntegration(srv.deps.db, srv.deps.cipher, tenant.orgId, { endpoint: url });
      const enqueued = await enqueue(srv.deps.db, hook, many(tenant.orgId, 300, 'split'));

      // two dispatchers as `serve --workers 2` runs them (src/cluster/worker.ts), polling (no NOTIFY here)
      for (const index of [0, 1]) running.push(new Dispatcher(srv.deps, undefined, { pollIntervalMs: 50, split: { index, count: 2 } }));
      for (const d of running) d.start();
      // each sends its part and holds no more (its lane is full until a request ends)
      const parts = [0, 1].map((i) => partOf(P, i, 2));
      const snapshots = () => running.map((d) => (d as unknown as { share: { snapshot(): { inFlight: number } } }).share.snapshot().inFlight);
      await eventually(
        async () => (snapshots().every((n, i) => n === parts[i]) && inFlight === P ? true : undefined),
        20_000,
        `both dispatchers to have their part of ${P} requests in flight`,
      );
      expect(most).to.equal(P);

      // then answered as they come: the whole backlog drains, never above the cap
      hold = false;
      for (const answer of held.splice(0)) answer();
      await eventually(
        async () => {
          const left = await srv.deps.db
            .selectFrom('deliveries')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('integration_id', '=', hook.id)
            .where('status', '<>', 'delivered')
            .executeTakeFirstOrThrow();
          return Number(left.n) === 0 ? true : undefined;
        },
        30_000,
        'every delivery to be delivered',
      );
      expect(most, 'requests in flight to the integration at once').to.equal(P);
      const expected = await srv.deps.db.selectFrom('deliveries').select('webhook_id').where('integration_id', '=', hook.id).execute();
      expect(ids).to.have.length(enqueued.length);
      expect(new Set(ids)).to.deep.equal(new Set(expected.map((e) => e.webhook_id)));
    });
  });
});
