// `trackway privacy erase|export --org ID --email E | --phone P | --core-id C
// [--suppress]`: the operator's way to honour a request (README "Privacy").
// The request is recorded as the API records one (requested_via `cli`), then
// run here to its end; if a server's runner happens to claim it first, this
// waits for that run instead.
import type { Database } from '../db/database.ts';
import { createAjv } from '../http/ajv.ts';
import { contractDocument } from '../http/contract.ts';
import { valueFieldErrors } from '../http/field-errors.ts';
import type { Schemas } from '../http/types.ts';
import type { Logger } from '../log.ts';
import { createOrganisationDirectory } from '../platform/organisation-directory.service.ts';
import type { Cipher } from '../platform/secrets.service.ts';
import { createRequest, findRequestRow, type PrivacyRequestView, requestView } from './privacy.service.ts';
import { claimAndRun } from './request-run.service.ts';
import { PrivacyCommandError } from './command-error.cli.ts';
import { SubjectHasher } from './subject-hash.crypto.ts';
import { suppressionCheck } from './suppression.service.ts';
import type { OrgId } from '../db/tenancy.ts';

export { PrivacyCommandError };

export interface PrivacyCommand {
  type: 'erase' | 'export';
  orgId: OrgId;
  subject: Schemas['PrivacySubject'];
  suppress: boolean;
}

const LEASE_MS = 60_000;
const POLL_MS = 250;

/** The subject as the API would take it: checked against the contract's PrivacySubject. */
function checkSubject(subject: Schemas['PrivacySubject']): void {
  const ajv = createAjv();
  ajv.addSchema(contractDocument(), 'contract');
  const valid = ajv.compile({ $ref: 'contract#/components/schemas/PrivacySubject' });
  if (valid(subject)) return;
  const first = valueFieldErrors(valid.errors)[0];
  throw new PrivacyCommandError(`the subject ${first?.path.slice(1) ?? ''} ${first?.message ?? 'is invalid'}`.replace(/\s+/g, ' '));
}

/** Records the request and runs it to its end; the finished request (an export with its result). */
export async function runPrivacyCommand(deps: { db: Database; cipher: Cipher; log: Logger }, cmd: PrivacyCommand): Promise<PrivacyRequestView> {
  const { db, cipher, log } = deps;
  checkSubject(cmd.subject);
  const organisations = createOrganisationDirectory(db, cipher, suppressionCheck(db));
  if (!(await organisations.policy(cmd.orgId))) throw new PrivacyCommandError(`no organisation has the id ${cmd.orgId}`);
  const subjects = new SubjectHasher(cipher);
  let made: PrivacyRequestView;
  try {
    made = await createRequest({ db, cipher, subjects, organisations }, { via: 'cli' }, cmd.orgId, cmd);
  } catch (e) {
    const errors = (e as { errors?: { path: string; message: string }[] }).errors;
    if (errors?.length) throw new PrivacyCommandError(`the subject ${errors[0]!.path.replace('/subject/', '')} ${errors[0]!.message}`);
    throw e;
  }
  for (;;) {
    const end = await claimAndRun({ db, cipher, subjects, log }, cmd.orgId, made.id, LEASE_MS);
    if (typeof end === 'object') {
      throw new PrivacyCommandError(
        `privacy request ${made.id} stopped on a ${end.error}; a running Trackway server takes it up again within a minute (follow it with the API)`,
      );
    }
    const row = await findRequestRow(db, cmd.orgId, made.id);
    if (!row) throw new PrivacyCommandError(`privacy request ${made.id} is gone`);
    if (row.status === 'done') return requestView(row);
    if (row.status === 'failed') throw new PrivacyCommandError(`privacy request ${made.id} failed: ${row.error ?? 'unknown error'}`);
    // another runner holds it (a server's): wait for its run
    if (end === undefined) await new Promise((r) => setTimeout(r, POLL_MS));
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
