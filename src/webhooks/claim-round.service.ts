// One claim round of the dispatcher: which organisations to claim for, in
// which order, and how much each may take (fair-share.rules.ts decides the rooms).
//
// - Organisations named by a NOTIFY (new deliveries committed) are claimed
//   directly, one statement within each organisation, so a healthy
//   organisation's new delivery is claimed at once whatever backlog the
//   others have.
// - The scan for other due work (retries coming due, deliveries whose lease
//   expired, a NOTIFY missed while LISTEN was away) spans every
//   organisation and costs more the larger the due backlog, so it runs only
//   when asked (dispatcher.worker.ts: at start, after a reconnect, when a retry or
//   a pause is due, and at every poll interval).
// - Organisations go in order of how little of their fair share they hold
//   (those holding nothing first), then faster endpoints first; the round's
//   limit is shared between them, and one that is cut is claimed again at once.
import type { Database } from '../db/database.ts';
import type { OrgId } from '../db/tenancy.ts';
import { type ClaimedDelivery, type DispatchSlot, SCAN_ORGANISATIONS, claimForOrganisation, dueOrganisations } from './claims.repository.ts';
import type { FairShare } from './fair-share.rules.ts';

export interface RoundOptions {
  /** most deliveries claimed in the round */
  limit: number;
  /** most deliveries claimed by one statement */
  batchSize: number;
  leaseMarginMs: number;
  slot: DispatchSlot | undefined;
  /** scan the database for organisations with due work */
  scan: boolean;
  /** organisations a NOTIFY named (the round takes them out, also between its statements) */
  named: Set<OrgId>;
}

export interface RoundResult {
  claimed: number;
  /** an organisation with more due has room now: claim again at once */
  again: boolean;
}

/** Takes the claimed rows in (`claimedAt` bounds their leases; `reserve`: held from the reserve). */
export type Accept = (rows: ClaimedDelivery[], claimedAt: number, reserve: boolean) => void;

export async function claimRound(db: Database, share: FairShare, opts: RoundOptions, accept: Accept): Promise<RoundResult> {
  const takeNamed = () => {
    const named = [...opts.named];
    opts.named.clear();
    return named;
  };
  share.due(takeNamed());
  share.refresh();
  if (opts.scan) {
    const found = await dueOrganisations(db, new Date(), SCAN_ORGANISATIONS, share.withoutRoom(), opts.slot);
    share.due(found);
    share.refresh();
  }
  let queue = share.wanting();
  let left = opts.limit;
  let claimed = 0;
  while (left > 0) {
    // an organisation named while this round ran goes first: a long round does not delay it
    const named = takeNamed();
    if (named.length > 0) {
      share.due(named);
      share.refresh();
      const first = share.wanting().filter((id) => named.includes(id));
      queue = [...first, ...queue.filter((id) => !first.includes(id))];
    }
    const org = queue.shift();
    if (org === undefined) break;
    const { room, reserve } = share.roomFor(org);
    if (room <= 0) continue;
    const take = Math.min(room, opts.batchSize, Math.max(1, Math.ceil(left / (queue.length + 1))));
    // measured before the claim: the leases it gives end no sooner than claimedAt + timeout + margin
    const claimedAt = Date.now();
    const integrationRooms = share.integrationRooms(org);
    const claim = await claimForOrganisation(db, org, new Date(claimedAt), {
      limit: take,
      leaseMarginMs: opts.leaseMarginMs,
      integrationRooms,
      defaultIntegrationRoom: share.opts.perIntegration,
    });
    accept(claim.rows, claimedAt, reserve);
    const got = claim.rows.filter((r) => !r.probe).length;
    share.claimed(
      org,
      take,
      got,
      claim.cut.map((c) => c.integrationId),
      integrationRooms,
    );
    left -= claim.rows.length;
    claimed += claim.rows.length;
  }
  return { claimed, again: share.anyClaimable() };
}
