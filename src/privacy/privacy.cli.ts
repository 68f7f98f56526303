// `trackway privacy erase|export --org ID --email E | --phone P | --core-id C
// [--suppress]`: the operator's way to honour a request (README "Privacy").
// The request is recorded as the API records one (requested_via `cli`), then
// run here to its end; if a server's runner happens to claim it first, this
// waits for that run instead.
import type { Database } from '../db/database.ts';
import type { Schemas } from '../http/types.ts';
import type { Logger } from '../log.ts';
import { createOrganisationDirectory } from '../platform/organisation-directory.ts';
import type { Cipher } from '../platform/secrets.ts';
import { findPolicyRow } from '../platform/organisation-settings.repository.ts';
import { createRequest, type PrivacyRequestView, requestView } from './privacy.service.ts';
import { runClaimed } from './request-run.service.ts';
import { claimNext, findRequest } from './requests.repository.ts';
import { SubjectHasher } from './subject-hash.ts';

/** A privacy command that cannot be carried out (unknown organisation, bad subject, a failed run). */
export class PrivacyCommandError extends Error {}

export interface PrivacyCommand {
  type: 'erase' | 'export';
  orgId: number;
  subject: Schemas['PrivacySubject'];
  suppress: boolean;
}

const LEASE_MS = 60_000;
const POLL_MS = 250;

/** Records the request and runs it to its end; the finished request (an export with its result). */
export async function runPrivacyCommand(deps: { db: Database; cipher: Cipher; log: Logger }, cmd: PrivacyCommand): Promise<PrivacyRequestView> {
  const { db, cipher, log } = deps;
  if (!(await findPolicyRow(db, cmd.orgId))) throw new PrivacyCommandError(`no organisation has the id ${cmd.orgId}`);
  const subjects = new SubjectHasher(cipher);
  let made: PrivacyRequestView;
  try {
    made = await createRequest({ db, cipher, subjects, organisations: createOrganisationDirectory(db, cipher) }, { via: 'cli' }, cmd.orgId, cmd);
  } catch (e) {
    const errors = (e as { errors?: { path: string; message: string }[] }).errors;
    if (errors?.length) throw new PrivacyCommandError(`the subject ${errors[0]!.path.replace('/subject/', '')} ${errors[0]!.message}`);
    throw e;
  }
  for (;;) {
    const claim = await claimNext(db, cmd.orgId, new Date(), new Date(Date.now() + LEASE_MS), made.id);
    const end = claim ? await runClaimed({ db, cipher, subjects, log }, claim, { leaseMs: LEASE_MS }) : undefined;
    if (typeof end === 'object') {
      throw new PrivacyCommandError(
        `privacy request ${made.id} stopped on a ${end.error}; a running Trackway server takes it up again within a minute (follow it with the API)`,
      );
    }
    const row = await findRequest(db, cmd.orgId, made.id, true);
    if (!row) throw new PrivacyCommandError(`privacy request ${made.id} is gone`);
    if (row.status === 'done') return requestView(row);
    if (row.status === 'failed') throw new PrivacyCommandError(`privacy request ${made.id} failed: ${row.error ?? 'unknown error'}`);
    // another runner holds it (a server's): wait for its run
    if (!claim) await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** The counts as one line: `1 person, 2 visitors, 2 contacts, 148 events, 37 deliveries`. */
export function countsLine(counts: Schemas['PrivacyCounts'] | null): string {
  const c = counts ?? { persons: 0, visitors: 0, contacts: 0, events: 0, deliveries: 0 };
  const n = (k: number, one: string, many: string) => `${k} ${k === 1 ? one : many}`;
  return [
    n(c.persons, 'person', 'persons'),
    n(c.visitors, 'visitor', 'visitors'),
    n(c.contacts, 'contact', 'contacts'),
    n(c.events, 'event', 'events'),
    n(c.deliveries, 'delivery', 'deliveries'),
  ].join(', ');
}
