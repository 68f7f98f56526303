// Running one claimed privacy request (README "Privacy"): resolve the
// subject to its person, erase or export, finish. Every write of the run is
// fenced by its claim (requests.repository.ts): the erasure's steps record
// their counts and renew the lease in their own transaction, and a run whose
// claim was taken over stops there, rolled back. A run that fails (or stops)
// leaves the request running under its lease: another runner takes it up
// when the lease ends, from where it was (the erasure finds the rest through
// the persons it recorded). After MAX_ATTEMPTS claims it is failed.
import type { Database } from '../db/database.ts';
import type { PrivacyCounts } from '../db/schema.ts';
import { personOfContact, personOfVisitor } from '../identity/person-records.service.ts';
import type { Logger } from '../log.ts';
import type { Cipher } from '../platform/secrets.service.ts';
import { addCounts, Eraser, type EraserDeps, NO_COUNTS, RunStopped, type Step } from './eraser.service.ts';
import { buildExport, EXPORT_KEEP_MS } from './export.service.ts';
import { advance, claimNext, type ClaimedRequest, type Fence, finishRequest, releaseClaim } from './requests.repository.ts';
import type { Subject } from './subject-hash.crypto.ts';
import type { OrgId } from '../db/tenancy.ts';

export const MAX_ATTEMPTS = 10;

export interface RunDeps extends EraserDeps {
  cipher: Cipher;
  log: Logger;
}

export interface RunOptions {
  leaseMs: number;
  /** rows per erasure step */
  batch?: number;
  /** asked to stop: the run ends after its current step (the next runner goes on) */
  stopping?: () => boolean;
}

/** The run's claim was taken over by another runner (its lease had expired). */
export class ClaimLost extends Error {}

/** The sealed form of a subject (privacy_requests.subject_enc). */
export function sealSubject(cipher: Cipher, subject: Subject): string {
  return cipher.encrypt(JSON.stringify(subject));
}

function openSubject(cipher: Cipher, sealed: string): Subject {
  return JSON.parse(cipher.decrypt(sealed)) as Subject;
}

/** The persons a subject names: none when it is unknown to the organisation. */
export async function resolveSubject(db: Database, orgId: OrgId, subject: Subject): Promise<number[]> {
  const person =
    subject.type === 'core_id'
      ? await personOfVisitor(db, orgId, subject.value)
      : await personOfContact(db, orgId, subject.type === 'email' ? 'EMAIL' : 'PHONE', subject.value);
  return person === undefined ? [] : [person];
}

/** What is safe to keep or log of an error: its kind, never its message (a database error can quote values). */
function errorKind(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown };
  return typeof e?.code === 'string' ? `database error ${e.code}` : typeof e?.name === 'string' ? e.name : 'error';
}

/** How a run ended: the request finished (done or failed), the runner stopped, another runner took over, or an error (retried later). */
export type RunEnd = 'finished' | 'stopped' | 'lost' | { error: string };

/** Runs a claimed request to its end (or until it stops, loses its claim or meets an error). */
export async function runClaimed(deps: RunDeps, claim: ClaimedRequest, opts: RunOptions): Promise<RunEnd> {
  const fence: Fence = { orgId: claim.org_id, id: claim.id, attempt: claim.attempts };
  const where = { org: claim.org_id, request: claim.id, type: claim.type, attempt: claim.attempts };
  const fail = async (error: string) => {
    await finishRequest(deps.db, fence, { status: 'failed', at: new Date(), counts: claim.counts, result: null, resultExpiresAt: null, error });
    deps.log.warn({ ...where, error }, 'privacy request failed');
    return 'finished' as const;
  };
  if (claim.attempts > MAX_ATTEMPTS) return fail(`gave up after ${MAX_ATTEMPTS} attempts; send the request again`);
  if (claim.subject_enc === null) return fail('the request has no subject to run with');
  let subject: Subject;
  try {
    subject = openSubject(deps.cipher, claim.subject_enc);
  } catch {
    return fail('the subject cannot be decrypted with this server’s secret key (TRACKWAY_SECRET_KEY)');
  }
  try {
    if (claim.type === 'export') await runExport(deps, claim, fence, subject);
    else await runErase(deps, claim, fence, subject, opts);
    deps.log.info(where, 'privacy request done');
    return 'finished';
  } catch (err) {
    if (err instanceof ClaimLost) {
      deps.log.warn(where, 'privacy request taken over by another runner');
      return 'lost';
    }
    if (err instanceof RunStopped) {
      await releaseClaim(deps.db, fence).catch(() => {});
      return 'stopped';
    }
    const error = errorKind(err);
    deps.log.warn({ ...where, error }, 'privacy request run failed; retried when its lease ends');
    return { error };
  }
}

async function runExport(deps: RunDeps, claim: ClaimedRequest, fence: Fence, subject: Subject): Promise<void> {
  const persons = await resolveSubject(deps.db, claim.org_id, subject);
  const at = new Date();
  const { document, counts } = await buildExport(deps.db, claim.org_id, subject.type, persons, at);
  const done = await finishRequest(deps.db, fence, {
    status: 'done',
    at: new Date(),
    counts,
    result: JSON.stringify(document),
    resultExpiresAt: new Date(at.getTime() + EXPORT_KEEP_MS),
    error: null,
  });
  if (!done) throw new ClaimLost();
}

async function runErase(deps: RunDeps, claim: ClaimedRequest, fence: Fence, subject: Subject, opts: RunOptions): Promise<void> {
  const { db } = deps;
  const lease = () => new Date(Date.now() + opts.leaseMs);
  // the persons: resolved by the first run and recorded, so that a run taking over goes on with them
  let persons = claim.person_ids?.map(Number);
  if (!persons) {
    const found = await resolveSubject(db, claim.org_id, subject);
    persons = found;
    const recorded = await db.transaction().execute((tx) => advance(tx, fence, { leaseUntil: lease(), personIds: found, counts: NO_COUNTS }));
    if (!recorded) throw new ClaimLost();
  }
  let counts: PrivacyCounts = claim.counts ?? NO_COUNTS;
  const step: Step = async (fn) => {
    if (opts.stopping?.()) throw new RunStopped();
    let next = counts;
    const delta = await db.transaction().execute(async (tx) => {
      const d = await fn(tx);
      next = addCounts(counts, d);
      if (!(await advance(tx, fence, { leaseUntil: lease(), counts: next }))) throw new ClaimLost();
      return d;
    });
    counts = next;
    return delta;
  };
  await new Eraser(deps, claim.org_id, step, opts.batch).persons(persons, new Date());
  const done = await finishRequest(db, fence, {
    status: 'done',
    at: new Date(),
    counts: { ...counts, persons: persons.length },
    result: null,
    resultExpiresAt: null,
    error: null,
  });
  if (!done) throw new ClaimLost();
}

/** Claims request `id` unless another runner holds it, and runs it; undefined when it was held (the CLI's run). */
export async function claimAndRun(deps: RunDeps, orgId: OrgId, id: number, leaseMs: number): Promise<RunEnd | undefined> {
  const claim = await claimNext(deps.db, orgId, new Date(), new Date(Date.now() + leaseMs), id);
  return claim ? runClaimed(deps, claim, { leaseMs }) : undefined;
}
