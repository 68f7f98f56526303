// The rules of fair-share.rules.ts, lanes.rules.ts and max-min.rules.ts without a database or
// a clock to wait on: max-min division of the pool, the reserve for
// organisations holding nothing, slow endpoints' smaller lanes, and slow
// successes costing like failures. The dispatcher under a real flood is
// test/webhooks/fair-shares.test.ts.
import { expect } from 'chai';
import type { ClaimedDelivery } from '../../src/webhooks/claims.repository.ts';
import { FairShare, type FairShareOptions, type Job } from '../../src/webhooks/fair-share.rules.ts';
import { laneLimit, newLane } from '../../src/webhooks/lanes.rules.ts';
import { maxMinShares } from '../../src/webhooks/max-min.rules.ts';
import { testOrgId } from '../support/org-id.ts';

/** The organisations numbered so, as the rules take them. */
const orgs = (...ns: number[]) => ns.map(testOrgId);

const OPTS: FairShareOptions = { perIntegration: 8, perOrganisation: 448, global: 512, reserve: 64, slowMs: 2000, queueMs: 1000 };

let nextId = 0;
function row(orgId: number, integrationId: number): ClaimedDelivery {
  return {
    org_id: testOrgId(orgId),
    id: ++nextId,
    integration_id: integrationId,
    kind: 'matched',
    webhook_id: `msg_${nextId}`,
    body: '{}',
    attempts_count: 1,
    schedule_start: 0,
    endpoint: 'https://hooks.example.com/x',
    auth_token_enc: null,
    signing_secret_enc: '',
    http_timeout: 30,
    modified_at: new Date(),
    probe: false,
    due_at: new Date(),
  };
}

/** Claims `n` deliveries of one integration as a claim round would (rooms first), starting them. */
function take(share: FairShare, orgId: number, integrationId: number, n: number): Job[] {
  const { room, reserve } = share.roomFor(testOrgId(orgId));
  const jobs: Job[] = [];
  for (let i = 0; i < Math.min(n, room); i++) jobs.push(share.add(row(orgId, integrationId), Date.now() + 60_000, reserve));
  for (const lane of new Set(jobs.map((j) => j.lane))) while (share.next(lane));
  return jobs;
}

describe('fair shares (pure rules)', () => {
  it('divides max-min: what an organisation does not want goes to the others, never above the cap', () => {
    const { shares, level } = maxMinShares(
      [
        { id: 1, want: Infinity },
        { id: 2, want: 10 },
        { id: 3, want: Infinity },
        { id: 4, want: Infinity },
      ],
      448,
      448,
    );
    expect(shares.get(2)).to.equal(10);
    expect([shares.get(1), shares.get(3), shares.get(4)].sort()).to.deep.equal([146, 146, 146]);
    expect(level).to.equal(146);
    // alone, an organisation may use all of it (work-conserving), but not beyond the cap
    expect(maxMinShares([{ id: 1, want: Infinity }], 448, 448).shares.get(1)).to.equal(448);
    expect(maxMinShares([{ id: 1, want: Infinity }], 448, 100).shares.get(1)).to.equal(100);
    // more organisations than slots: the remainder goes to those that want the most, none gets a negative part
    const many = maxMinShares(
      Array.from({ length: 10 }, (_, i) => ({ id: i, want: Infinity })),
      7,
      7,
    );
    expect([...many.shares.values()].reduce((a, b) => a + b, 0)).to.equal(7);
    expect(Math.min(...many.shares.values())).to.equal(0);
  });

  it('shares the pool between the organisations with due work, and keeps the reserve for those holding nothing', () => {
    const share = new FairShare(OPTS);
    share.due(orgs(1, 2, 3, 4, 5));
    share.refresh();
    // 5 organisations wanting everything: 448 / 5 each (the reserve is not theirs)
    for (let org = 1; org <= 5; org++) for (let i = 0; i < 16; i++) take(share, org, org * 100 + i, 8);
    expect(share.room()).to.deep.equal({ pool: 0, reserve: 64 });
    expect(share.snapshot()).to.include({ inFlight: 448, reserveHeld: 0, organisationsFull: 5, largestOrganisation: 90 });
    for (let org = 1; org <= 5; org++) expect(share.roomFor(testOrgId(org))).to.deep.equal({ room: 0, reserve: false });

    // a sixth organisation holding nothing gets one slot at once, from the reserve
    share.due(orgs(6));
    share.refresh();
    expect(share.roomFor(testOrgId(6))).to.deep.equal({ room: 1, reserve: true });
    const [first] = take(share, 6, 600, 5);
    expect(share.roomFor(testOrgId(6)), 'one reserve slot at a time').to.deep.equal({ room: 0, reserve: false });
    expect(share.snapshot().reserveHeld).to.equal(1);
    // it answered fast: it holds nothing again and gets the next slot at once
    expect(share.finished(first!, 15), 'its next delivery is worth a claim').to.equal(true);
    expect(share.roomFor(testOrgId(6))).to.deep.equal({ room: 1, reserve: true });

    // as a slow organisation's request ends, the pool slot goes to the one below its share
    share.refresh();
    const slowJob = [...(share as unknown as { lanes: Map<number, { running: Set<Job> }> }).lanes.get(100)!.running][0]!;
    share.finished(slowJob, 29_000);
    share.refresh();
    expect(share.wanting()[0], 'the organisation holding least of its share goes first').to.equal(6);
    expect(share.roomFor(testOrgId(6)).room).to.equal(1);
    expect(share.roomFor(testOrgId(6)).reserve).to.equal(false);
  });

  it('gives no reserve slot to an organisation whose endpoints were slow lately, even when they answered 200', () => {
    const share = new FairShare({ ...OPTS, global: 16, reserve: 4, perOrganisation: 12 });
    share.due(orgs(1));
    share.refresh();
    const jobs = take(share, 1, 10, 8);
    // a slow success costs like a failure: 29 s each
    for (const j of jobs) share.finished(j, 29_000);
    share.claimed(testOrgId(1), 8, 0, [], []); // nothing more due for now
    // fill the pool with someone else
    share.due(orgs(2));
    share.refresh();
    for (let i = 0; i < 3; i++) take(share, 2, 20 + i, 8);
    expect(share.room().pool).to.equal(0);
    share.due(orgs(1, 3));
    share.refresh();
    expect(share.roomFor(testOrgId(1)), 'slow lately: waits for its part of the pool').to.deep.equal({ room: 0, reserve: false });
    expect(share.roomFor(testOrgId(3)), 'never seen: one reserve slot').to.deep.equal({ room: 1, reserve: true });
    // and among the organisations that want more, the fast go first
    expect(share.wanting()).to.deep.equal([3]);
  });

  it('reopens the reserve to no one once it is all taken, and to the next organisation when a slot frees', () => {
    const share = new FairShare({ ...OPTS, global: 10, reserve: 2, perOrganisation: 8 });
    share.due(orgs(1));
    share.refresh();
    take(share, 1, 10, 8);
    share.due(orgs(2, 3, 4));
    share.refresh();
    const [a] = take(share, 2, 20, 1);
    take(share, 3, 30, 1);
    expect(share.room()).to.deep.equal({ pool: 0, reserve: 0 });
    expect(share.roomFor(testOrgId(4))).to.deep.equal({ room: 0, reserve: false });
    expect(share.finished(a!, 10), 'a reserve slot freed').to.equal(true);
    expect(share.roomFor(testOrgId(4))).to.deep.equal({ room: 1, reserve: true });
  });

  it('gives a slow endpoint a smaller lane: perIntegration × slowMs / its time, at least 1', () => {
    const lane = newLane(1, testOrgId(1));
    expect(laneLimit(lane, OPTS), 'unknown: full lane').to.equal(8);
    lane.ewmaMs = 50;
    expect(laneLimit(lane, OPTS)).to.equal(8);
    lane.ewmaMs = 2000;
    expect(laneLimit(lane, OPTS)).to.equal(8);
    lane.ewmaMs = 4000;
    expect(laneLimit(lane, OPTS)).to.equal(4);
    lane.ewmaMs = 29_000;
    expect(laneLimit(lane, OPTS)).to.equal(1);
    // a request in flight for longer than slowMs counts before it ends: 6 s old,
    // 8 × 2 s / 6 s → 2, and still 2 however long (up to 2 s) this test is held
    // up between the two clock readings (8 s old sat on the edge: 8,001 ms → 1)
    const fresh = newLane(2, testOrgId(1));
    fresh.running.add({ startedAt: Date.now() - 6000 } as Job);
    expect(laneLimit(fresh, OPTS)).to.equal(2);
  });

  it('lets a fast endpoint hold a queue beyond its requests in flight, and a slow one only what it sends', () => {
    const share = new FairShare(OPTS);
    share.due(orgs(1));
    share.refresh();
    const jobs = take(share, 1, 10, 8);
    const lane = jobs[0]!.lane;
    for (const j of jobs) share.finished(j, 20);
    expect(share.capacity(lane), 'fast: 8 in flight + ~1 s of work').to.be.above(8);
    for (let i = 0; i < 8; i++) lane.ewmaMs = 10_000;
    expect(share.capacity(lane)).to.equal(1);
  });

  it('forgets an idle organisation with its lanes, and a lane idle for ten minutes when its organisation is next claimed', () => {
    const share = new FairShare(OPTS);
    // integration 11 of organisation 1 was slow (2 requests in flight); 12 holds a delivery
    const slow = share.add(row(1, 11), Date.now() + 60_000, false);
    share.next(slow.lane);
    share.finished(slow, 8000);
    share.add(row(1, 12), Date.now() + 60_000, false);
    // organisation 2: one slow integration, then nothing held
    const other = share.add(row(2, 21), Date.now() + 60_000, false);
    share.next(other.lane);
    share.finished(other, 8000);
    expect(share.integrationRooms(testOrgId(1)), 'its own lanes only').to.deep.equal([
      { id: 11, room: 2 },
      { id: 12, room: 7 },
    ]);
    expect(share.integrationRooms(testOrgId(2))).to.deep.equal([{ id: 21, room: 2 }]);

    // ten minutes on, organisation 2 holds nothing and wants nothing: it goes, and its lane with it
    atLeast(11 * 60_000, () => share.refresh());
    expect(share.integrationRooms(testOrgId(2)), 'organisation 2 forgotten').to.deep.equal([]);
    // a new delivery of 21 starts a new lane (8 in flight, 1 held → room 7), not the slow one (2, 1 held → 1)
    share.add(row(2, 21), Date.now() + 60_000, false);
    expect(share.integrationRooms(testOrgId(2))).to.deep.equal([{ id: 21, room: 7 }]);
    // organisation 1 holds a delivery (12): it stays, and its claim forgets its idle lane 11
    atLeast(11 * 60_000, () => expect(share.integrationRooms(testOrgId(1))).to.deep.equal([{ id: 12, room: 7 }]));
    share.add(row(1, 11), Date.now() + 60_000, false);
    expect(share.integrationRooms(testOrgId(1))).to.deep.equal([
      { id: 12, room: 7 },
      { id: 11, room: 7 },
    ]);
  });
});

/** Runs `fn` with Date.now() at least `ms` ahead of the real clock (the rules read no other clock). */
function atLeast(ms: number, fn: () => void): void {
  const real = Date.now;
  Date.now = () => real() + ms;
  try {
    fn();
  } finally {
    Date.now = real;
  }
}
