// The Privacy page of one organisation: erase, export or unsuppress a
// customer by email, phone or visitor ID (createPrivacyRequest, an erase after
// a confirmation), the requests with their status and counts (an export's
// document downloadable), the suppression list (privacy-lists.tsx), and the
// privacy settings: Global Privacy Control and visitor retention
// (updateOrganisationSettings).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiFailure, call, platform, type Schemas } from './api.ts';
import { Requests, SUBJECTS, Suppressions } from './privacy-lists.tsx';
import { ErrorNote, Show, useAsync } from './ui.tsx';

type Organisation = Schemas['OrganisationDetail'];
type RequestType = Schemas['PrivacyRequestType'];
type SubjectType = Schemas['PrivacySubjectType'];
type Path = { platform_name: string; org_id: number };

/** type, its name, what it does, its button */
const TYPES: [RequestType, string, string, string][] = [
  [
    'erase',
    'Erase',
    'Delete everything stored about the customer, and tell the integrations that receive contacts to delete their copies.',
    'Erase the customer',
  ],
  ['export', 'Export', 'A copy of everything stored about the customer, as a JSON document to download (kept 7 days).', 'Export the customer'],
  ['unsuppress', 'Stop suppressing', 'Take the customer off the suppression list: the shop may track them again.', 'Take off the suppression list'],
];

export function Privacy({ orgId }: { orgId: number }) {
  // read again on every visit: the frame's copy may predate a change made here
  const org = useAsync(
    () => call(api.GET('/v1/rest/{platform_name}/organisations/{org_id}', { params: { path: { platform_name: platform(), org_id: orgId } } })),
    [orgId],
  );
  // bumped by every new request, so the lists below read again
  const [made, setMade] = useState(0);
  const [message, setMessage] = useState('');
  const path = { platform_name: platform(), org_id: orgId };
  return (
    <section>
      <h1 tabIndex={-1}>Privacy</h1>
      <p class="muted">
        Honour your customers' rights: erase or export what this organisation stores about a customer, and keep a customer who objected from being
        tracked again.
      </p>
      <p role="status" class="flash">
        {message}
      </p>
      <RequestForm
        path={path}
        onMade={(r, text) => {
          setMade((n) => n + 1);
          setMessage(`Request #${r.id}: ${text}`);
        }}
      />
      <Requests path={path} made={made} />
      <Suppressions path={path} made={made} />
      <Show value={org} label="Loading the privacy settings…">
        {(o) => <PrivacySettings key={o.id} org={o} path={path} onSaved={setMessage} />}
      </Show>
    </section>
  );
}

/** What the API said was wrong, as one line. */
const describe = (err: unknown) =>
  err instanceof ApiFailure
    ? err.errors.length > 0
      ? err.errors.map((e) => `${e.path.replace(/^\//, '') || 'request'}: ${e.message}`).join(' · ')
      : err.message
    : String(err);

/**
 * What was wrong with the identifier: the subject is one of three shapes, so
 * the API reports on each; only the one the form sent matters.
 */
function subjectProblem(err: unknown, by: SubjectType, label: string): string {
  if (!(err instanceof ApiFailure)) return String(err);
  const mine = err.errors.filter((e) => e.path === `/subject/${by}` && e.message !== 'is required' && e.message !== 'is not allowed');
  return mine.length > 0 ? mine.map((e) => `The customer's ${label}: ${e.message}`).join(' · ') : describe(err);
}

function RequestForm({ path, onMade }: { path: Path; onMade: (r: Schemas['PrivacyRequest'], text: string) => void }) {
  const [type, setType] = useState<RequestType>('erase');
  const [by, setBy] = useState<SubjectType>('email');
  const [value, setValue] = useState('');
  const [suppress, setSuppress] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const label = SUBJECTS.find(([t]) => t === by)![1];
  const named = label.toLowerCase().replace('visitor id', 'visitor ID');

  const send = async () => {
    setBusy(true);
    setError(null);
    const subject = (by === 'email' ? { email: value } : by === 'phone' ? { phone: value } : { core_id: value.trim() }) as Schemas['PrivacySubject'];
    // suppress must be false with unsuppress
    const body: Schemas['CreatePrivacyRequest'] = { type, subject, suppress: type !== 'unsuppress' && suppress };
    try {
      const r = await call(api.POST('/v1/rest/{platform_name}/organisations/{org_id}/privacy-requests', { params: { path }, body }));
      setConfirming(false);
      setValue('');
      const text =
        type === 'unsuppress'
          ? 'taken off the suppression list.'
          : `${type === 'erase' ? 'erasure' : 'export'} queued${suppress ? ', and suppressed from now on' : ''}.`;
      onMade(r, text);
    } catch (err) {
      setConfirming(false);
      setError(subjectProblem(err, by, named));
    } finally {
      setBusy(false);
    }
  };

  const submit = (e: Event) => {
    e.preventDefault();
    setError(null);
    if (value.trim() === '') {
      setError(`Enter the customer's ${named}.`);
      return;
    }
    if (type === 'erase') setConfirming(true);
    else void send();
  };

  return (
    <form class="panel" onSubmit={submit} aria-labelledby="new-request">
      <h2 id="new-request">New request</h2>
      <fieldset>
        <legend>What to do</legend>
        {TYPES.map(([t, name, help]) => (
          <div key={t}>
            <label class="check">
              <input type="radio" name="type" value={t} checked={type === t} onChange={() => setType(t)} aria-describedby={`type-${t}-help`} /> {name}
            </label>
            <p id={`type-${t}-help`} class="help option-help">
              {help}
            </p>
          </div>
        ))}
      </fieldset>
      <fieldset>
        <legend>Find the customer by</legend>
        <div class="choices">
          {SUBJECTS.map(([t, name]) => (
            <label class="check" key={t}>
              <input type="radio" name="by" value={t} checked={by === t} onChange={() => setBy(t)} /> {name}
            </label>
          ))}
        </div>
      </fieldset>
      <label for="subject">The customer's {named}</label>
      <input
        id="subject"
        type="text"
        inputMode={by === 'email' ? 'email' : by === 'phone' ? 'tel' : 'text'}
        autoComplete="off"
        spellcheck={false}
        aria-describedby="subject-help"
        value={value}
        onInput={(e) => setValue(e.currentTarget.value)}
      />
      <p id="subject-help" class="help">
        {by === 'core_id'
          ? 'The visitor ID (core_id) shown on the Visitors tab. The request covers the whole customer: every visitor joined to it.'
          : `As the shop identifies the customer; case, spaces${by === 'phone' ? ', dashes and brackets' : ''} do not matter. Trackway keeps only a keyed hash of it.`}
      </p>
      {type !== 'unsuppress' && (
        <>
          <label class="check">
            <input type="checkbox" checked={suppress} onChange={(e) => setSuppress(e.currentTarget.checked)} /> Also stop tracking this customer
            (suppress)
          </label>
          <p class="help">
            From now on, identifying with this {named} stores nothing that identifies the customer and notifies no one; the shop's tracker keeps
            working.
          </p>
        </>
      )}
      {error && <ErrorNote error={{ message: error }} />}
      {confirming ? (
        <ConfirmErase subject={`${named} ${value.trim()}`} busy={busy} onConfirm={send} onCancel={() => setConfirming(false)} />
      ) : (
        <div class="actions">
          <button type="submit" disabled={busy}>
            {busy ? 'Sending…' : TYPES.find(([t]) => t === type)![3]}
          </button>
        </div>
      )}
    </form>
  );
}

function ConfirmErase({ subject, busy, onConfirm, onCancel }: { subject: string; busy: boolean; onConfirm: () => void; onCancel: () => void }) {
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => button.current?.focus(), []);
  return (
    <div class="confirm" role="alertdialog" aria-labelledby="confirm-erase">
      <p id="confirm-erase" class="wrap">
        Erase everything stored about the customer with {subject}? Their visitors, contacts, events and notifications are deleted for good.
      </p>
      <div class="actions">
        <button type="button" class="danger" disabled={busy} onClick={onConfirm} ref={button}>
          {busy ? 'Erasing…' : 'Yes, erase'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}

function PrivacySettings({ org, path, onSaved }: { org: Organisation; path: Path; onSaved: (message: string) => void }) {
  const [gpc, setGpc] = useState(org.honor_gpc);
  const [days, setDays] = useState(org.visitor_retention_days === null ? '' : String(org.visitor_retention_days));
  const [saved, setSaved] = useState(org);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    const body: Schemas['OrganisationSettingsRequest'] = {};
    if (gpc !== saved.honor_gpc) body.honor_gpc = gpc;
    if (days.trim() !== '' && !/^\d{1,4}$/.test(days.trim())) {
      setError('Retention: a whole number of days from 1 to 3650, or empty to keep visitors.');
      return;
    }
    const retention = days.trim() === '' ? null : Number(days.trim());
    if (retention !== saved.visitor_retention_days) body.visitor_retention_days = retention;
    if (Object.keys(body).length === 0) {
      setError('Nothing has changed.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const o = await call(api.PATCH('/v1/rest/{platform_name}/organisations/{org_id}', { params: { path }, body }));
      setSaved(o);
      setGpc(o.honor_gpc);
      setDays(o.visitor_retention_days === null ? '' : String(o.visitor_retention_days));
      onSaved('Privacy settings saved.');
    } catch (err) {
      setError(describe(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="panel settings after-lists" onSubmit={submit} aria-labelledby="privacy-settings">
      <h2 id="privacy-settings">Privacy settings</h2>
      <label class="check">
        <input type="checkbox" checked={gpc} onChange={(e) => setGpc(e.currentTarget.checked)} /> Honour Global Privacy Control
      </label>
      <p class="help">
        Browsers with Global Privacy Control on (Sec-GPC) are answered as usual, but their identify calls store no contact and notify no one, and
        their activity is never linked to a customer or exported. The tracker then sends no email at all.
      </p>
      <label for="retention">Erase visitors not seen for (days)</label>
      <input
        id="retention"
        class="short"
        type="text"
        inputMode="numeric"
        autoComplete="off"
        aria-describedby="retention-help"
        value={days}
        onInput={(e) => setDays(e.currentTarget.value)}
      />
      <p id="retention-help" class="help">
        1 to 3650 days; empty keeps visitors. Checked every hour; a visitor erased this way goes with its contacts when nothing else refers to them.
      </p>
      {error && <ErrorNote error={{ message: error }} />}
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save privacy settings'}
        </button>
      </div>
    </form>
  );
}
