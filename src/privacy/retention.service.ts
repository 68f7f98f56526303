// Visitor retention (organisation setting visitor_retention_days, README
// "Privacy"): visitors not seen for that many days are erased exactly as an
// erase request would erase them (src/privacy/eraser.service.ts), in the same
// bounded steps. A person all of whose visitors are that old goes wholly:
// contacts (receivers get contactErased), deliveries, profile, catalogue
// entries and export results with it. A person still seen on another visitor
// keeps its contacts and profile and loses only the old visitors (their
// events, links and rows). Run hourly by the privacy runner.
import type { PrivacyCounts } from '../db/schema.ts';
import { personsSeenSince, visitorsNotSeenSince } from '../identity/person-records.service.ts';
import { organisationsWithRetention } from '../platform/organisation-settings.service.ts';
import { addCounts, ERASE_BATCH, Eraser, type EraserDeps, NO_COUNTS, RunStopped, type Step } from './eraser.service.ts';
import type { OrgId } from '../db/tenancy.ts';

/** The eraser's (the process's memory of fresh visitors included). */
export type RetentionDeps = EraserDeps;

export interface RetentionRun {
  /** what was erased, per organisation that had anything to erase */
  erased: { orgId: OrgId; counts: PrivacyCounts }[];
}

/** Erases, in every organisation with a retention, the visitors not seen for its number of days. */
export async function applyRetention(
  deps: RetentionDeps,
  opts: { now?: Date; batch?: number; stopping?: () => boolean } = {},
): Promise<RetentionRun> {
  const now = opts.now ?? new Date();
  const batch = opts.batch ?? ERASE_BATCH;
  const run: RetentionRun = { erased: [] };
  for (const { id: orgId, days } of await organisationsWithRetention(deps.db)) {
    const counts = await retainOrganisation(deps, orgId, new Date(now.getTime() - days * 86_400_000), now, batch, opts.stopping);
    if (counts.visitors > 0 || counts.contacts > 0 || counts.persons > 0) run.erased.push({ orgId, counts });
  }
  return run;
}

async function retainOrganisation(
  deps: RetentionDeps,
  orgId: OrgId,
  cutoff: Date,
  now: Date,
  batch: number,
  stopping: (() => boolean) | undefined,
): Promise<PrivacyCounts> {
  let counts = NO_COUNTS;
  const step: Step = async (fn) => {
    if (stopping?.()) throw new RunStopped();
    const d = await deps.db.transaction().execute(fn);
    counts = addCounts(counts, d);
    return d;
  };
  const eraser = new Eraser(deps, orgId, step, batch);
  for (;;) {
    const old = await visitorsNotSeenSince(deps.db, orgId, cutoff, batch);
    if (old.length === 0) return counts;
    const before = counts.visitors;
    const persons = [...new Set(old.map((v) => v.person_id))];
    const seen = new Set(await personsSeenSince(deps.db, orgId, persons, cutoff));
    const wholly = persons.filter((p) => !seen.has(p));
    await eraser.persons(wholly, now);
    counts = addCounts(counts, { persons: wholly.length });
    await eraser.visitors(old.filter((v) => seen.has(v.person_id)).map((v) => v.core_id));
    // nothing went (every one of them came back meanwhile): the next run looks again
    if (counts.visitors === before) return counts;
  }
}
