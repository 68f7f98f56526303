// Privacy in the tracking path (README "Privacy at ingest: Global Privacy
// Control and the suppression list"): what an ingest batch leaves out for the Global
// Privacy Control signal and for the organisation's suppression list. The
// requests themselves are answered exactly as any other (a shop's tracker
// must never break); this module only decides what is stored and sent.
//
// - `Sec-GPC: 1` under honor_gpc (the item's `gpc`, set by the tracking
//   service): an identify links no contact and stores no name (its visitor
//   is touched as any sighting is); an event is stored without its corex_id
//   (no stitching) and stays marked `gpc`, so the batch keeps it out of the
//   person's recent activity, the product catalogue and event exports.
// - The suppression list, only for organisations whose policy says
//   `suppressing` (the others cost nothing): ONE lookup per organisation per
//   batch (suppressedAmong) for the keyed hashes of the batch's core_ids and
//   of its identifies' emails and phones.
//   - A suppressed core_id: its items are dropped. No visitor row, no event,
//     no link, nothing sent — the person objected to being tracked, and the
//     core_id is what tracks them.
//   - An identify with a suppressed email or phone: as under GPC, for the
//     whole payload (a phone beside a suppressed email would identify the
//     same person).
//   - Event exports: before an event is exported, the contacts it would
//     carry are checked (exportable, answers cached for the batch): the
//     events of a person with a suppressed contact (one still stored, e.g.
//     after an export with `suppress`) are sent nowhere.
import type { Executor, OrgId } from '../db/tenancy.ts';
import { eventItem, type IdentifyItem, identifyItem, type IngestItem } from '../tracking/ingest.types.ts';
import type { SubjectHasher } from './subject-hash.crypto.ts';
import { suppressedAmong } from './suppression.repository.ts';

/** What the privacy rules of a batch need. */
export interface PrivacyDeps {
  /** keyed hashes of subjects (deps.subjects) */
  subjects: SubjectHasher;
}

interface ContactLike {
  type: 'EMAIL' | 'PHONE';
  value: string;
}

/** An identify that links nothing and names no one (the visitor is still touched). */
function withoutIdentity(it: IdentifyItem): IngestItem {
  return identifyItem(it, { contacts: [], name: null, verified: false });
}

/**
 * The privacy rules of one batch: what it may store (screen) and what it may
 * send (exportable). A unit of work: made by screen for the batch, dropped
 * with it (docs/architecture.md "One service shape").
 */
export class BatchPrivacy {
  private constructor(
    private readonly deps: PrivacyDeps,
    /** `org:hash` → on the suppression list; every hash asked about in this batch */
    private readonly known: Map<string, boolean>,
  ) {}

  /**
   * The batch's items as they may be stored: items of suppressed core_ids
   * left out, identifies under GPC or with a suppressed contact emptied,
   * events under GPC without their corex_id. One suppressedAmong per
   * suppressing organisation of the batch, none for the others.
   */
  static async screen(deps: PrivacyDeps, db: Executor, items: readonly IngestItem[]): Promise<{ items: IngestItem[]; privacy: BatchPrivacy }> {
    const known = new Map<string, boolean>();
    const privacy = new BatchPrivacy(deps, known);
    const asked = new Map<OrgId, Map<string, Buffer>>();
    const ask = (orgId: OrgId, hash: Buffer): string => {
      const k = `${orgId}:${hash.toString('hex')}`;
      if (!known.has(k)) {
        known.set(k, false);
        let hashes = asked.get(orgId);
        if (!hashes) asked.set(orgId, (hashes = new Map()));
        hashes.set(k, hash);
      }
      return k;
    };
    /** per item of a suppressing organisation: the keys of its core_id and its contacts */
    const keys = new Map<IngestItem, { core: string; contacts: string[] }>();
    for (const it of items) {
      if (!it.policy.suppressing) continue;
      const core = ask(it.orgId, deps.subjects.coreId(it.orgId, it.coreId));
      const contacts = it.kind === 'identify' ? it.claim.contacts.map((c) => ask(it.orgId, deps.subjects.contact(it.orgId, c))) : [];
      keys.set(it, { core, contacts });
    }
    for (const [orgId, hashes] of asked) {
      for (const h of await suppressedAmong(db, orgId, [...hashes.values()])) known.set(`${orgId}:${h.toString('hex')}`, true);
    }

    const kept: IngestItem[] = [];
    for (const it of items) {
      const k = keys.get(it);
      if (k && known.get(k.core)) continue;
      if (it.kind === 'identify') {
        const suppressed = k !== undefined && k.contacts.some((c) => known.get(c));
        kept.push(it.gpc || suppressed ? withoutIdentity(it) : it);
      } else kept.push(it.gpc && it.corexId !== null ? eventItem(it, null, it.name, it.body) : it);
    }
    return { items: kept, privacy };
  }

  /**
   * Whether an event of this organisation may be exported with these
   * contacts (those of its person): none of them is on the suppression list.
   * Free for organisations without one; otherwise the contacts not yet asked
   * about in this batch are looked up together, in the batch's transaction.
   */
  async exportable(db: Executor, orgId: OrgId, policy: { suppressing: boolean }, contacts: readonly ContactLike[]): Promise<boolean> {
    if (!policy.suppressing || contacts.length === 0) return true;
    const keys = contacts.map((c) => {
      const hash = this.deps.subjects.contact(orgId, c);
      return { key: `${orgId}:${hash.toString('hex')}`, hash };
    });
    const unknown = keys.filter((k) => !this.known.has(k.key));
    if (unknown.length > 0) {
      for (const k of unknown) this.known.set(k.key, false);
      for (const h of await suppressedAmong(
        db,
        orgId,
        unknown.map((k) => k.hash),
      ))
        this.known.set(`${orgId}:${h.toString('hex')}`, true);
    }
    return !keys.some((k) => this.known.get(k.key));
  }
}
