// The lists of the Privacy page (privacy.tsx): the organisation's privacy
// requests, newest first, with their status and counts, read again every
// few seconds while one is still queued or running, a finished export's
// document downloadable as a JSON file; and the suppression list, which holds
// keyed hashes only: each entry shows which kind of identifier it was, when
// and by which request, never who.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type ApiFailure, call, type Schemas } from './api.ts';
import { Badge, dateTime, Empty, ErrorNote, Pager, Show, useAsync, usePager } from './ui.tsx';

type Request = Schemas['PrivacyRequest'];
type Path = { platform_name: string; org_id: number };

/** The identifiers a request can name, as the page calls them. */
export const SUBJECTS: [Schemas['PrivacySubjectType'], string][] = [
  ['email', 'Email'],
  ['phone', 'Phone'],
  ['core_id', 'Visitor ID'],
];

const REFRESH_MS = 2000;
const TONE = { queued: 'warn', running: 'warn', done: 'ok', failed: 'bad' } as const;
const TYPE = { erase: 'Erase', export: 'Export', unsuppress: 'Stop suppressing' } as const;
const subjectName = (t: Schemas['PrivacySubjectType']) => SUBJECTS.find(([s]) => s === t)![1].toLowerCase();

function plural(n: number, one: string, many = `${one}s`) {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}

function Counts({ request: r }: { request: Request }) {
  if (r.type === 'unsuppress') return <span class="muted">—</span>;
  if (!r.counts) return <span class="muted">not yet</span>;
  const c = r.counts;
  const parts = [
    plural(c.persons, 'person'),
    plural(c.visitors, 'visitor'),
    plural(c.contacts, 'contact'),
    plural(c.events, 'event'),
    plural(c.deliveries, 'notification'),
  ];
  return (
    <span>
      {r.type === 'erase' ? (r.status === 'done' ? 'removed ' : 'removed so far ') : 'holds '}
      {parts.join(', ')}
    </span>
  );
}

export function Requests({ path, made }: { path: Path; made: number }) {
  const pager = usePager(path.org_id);
  const list = useAsync(
    () =>
      call(
        api.GET('/v1/rest/{platform_name}/organisations/{org_id}/privacy-requests', { params: { path, query: { cursor: pager.cursor, limit: 25 } } }),
      ),
    [path.org_id, pager.cursor, made],
  );
  const open = list.data?.items.some((r) => r.status === 'queued' || r.status === 'running') ?? false;
  // read again while a request is on its way; not while the tab is hidden
  const reload = useRef(list.reload);
  reload.current = list.reload;
  useEffect(() => {
    if (!open) return;
    const timer = setInterval(() => {
      if (!document.hidden) reload.current();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [open]);

  return (
    <section aria-labelledby="requests-title">
      <h2 id="requests-title">Requests</h2>
      <Show value={list} label="Loading the requests…">
        {(page) =>
          page.items.length === 0 ? (
            <Empty title="No privacy requests yet.">Requests made here, through the API or on the command line are listed here.</Empty>
          ) : (
            <>
              <table class="rows">
                <caption class="sr-only">Privacy requests, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Request</th>
                    <th scope="col">Status</th>
                    <th scope="col">Customer</th>
                    <th scope="col">Made</th>
                    <th scope="col">Outcome</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((r) => (
                    <tr key={r.id} aria-label={`Request ${r.id}`}>
                      <td data-label="Request">
                        {TYPE[r.type]} <span class="muted">#{r.id}</span>
                      </td>
                      <td data-label="Status">
                        <Badge tone={TONE[r.status]}>{r.status}</Badge>
                      </td>
                      {/* one child per cell: on a phone each cell is a label and its value */}
                      <td data-label="Customer">
                        <span>
                          by {subjectName(r.subject_type)} {r.suppress && <Badge tone="off">suppressed</Badge>}
                        </span>
                      </td>
                      <td data-label="Made">
                        <span>
                          <time dateTime={r.created_at}>{dateTime(r.created_at)}</time>{' '}
                          <span class="muted small">{r.requested_via === 'cli' ? 'on the command line' : `by user #${r.requested_by ?? '?'}`}</span>
                        </span>
                      </td>
                      <td data-label="Outcome">
                        <div>
                          <Counts request={r} />
                          {r.error && <p class="field-error wrap">{r.error}</p>}
                          {r.type === 'export' && r.status === 'done' && <ExportDownload path={path} request={r} />}
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager pager={pager} next={page.next_cursor} />
            </>
          )
        }
      </Show>
    </section>
  );
}

/** A finished export's document as a JSON file (read with its request, until it expires). */
function ExportDownload({ path, request: r }: { path: Path; request: Request }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | { message: string } | null>(null);
  if (r.result_expires_at && Date.parse(r.result_expires_at) <= Date.now()) return <p class="muted small">The document is no longer kept.</p>;
  const download = async () => {
    setBusy(true);
    setError(null);
    try {
      const full = await call(
        api.GET('/v1/rest/{platform_name}/organisations/{org_id}/privacy-requests/{request_id}', {
          params: { path: { ...path, request_id: r.id } },
        }),
      );
      if (!full.result) throw new Error('The document is no longer kept: make the export again.');
      const url = URL.createObjectURL(new Blob([JSON.stringify(full.result, null, 2)], { type: 'application/json' }));
      const a = document.createElement('a');
      a.href = url;
      a.download = `trackway-export-${path.org_id}-${r.id}.json`;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      setError(err instanceof Error ? err : { message: String(err) });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="actions">
      <button type="button" class="secondary small" disabled={busy} onClick={download} aria-label={`Download the export of request ${r.id}`}>
        {busy ? 'Preparing…' : 'Download JSON'}
      </button>
      {r.result_expires_at && <span class="muted small">kept until {dateTime(r.result_expires_at)}</span>}
      {error && <ErrorNote error={error} />}
    </div>
  );
}

export function Suppressions({ path, made }: { path: Path; made: number }) {
  const pager = usePager(path.org_id);
  const list = useAsync(
    () =>
      call(
        api.GET('/v1/rest/{platform_name}/organisations/{org_id}/privacy-suppressions', {
          params: { path, query: { cursor: pager.cursor, limit: 25 } },
        }),
      ),
    [path.org_id, pager.cursor, made],
  );
  return (
    <section aria-labelledby="suppressions-title" class="suppressions">
      <h2 id="suppressions-title">Suppression list</h2>
      <p class="help">
        Customers the shop must not track: their identify calls store nothing that identifies them and notify no one. The list keeps keyed hashes
        only, so it cannot say who is on it; to take someone off, make a "Stop suppressing" request with their email, phone or visitor ID.
      </p>
      <Show value={list} label="Loading the suppression list…">
        {(page) =>
          page.items.length === 0 ? (
            <Empty title="Nobody is suppressed.">Tick "Also stop tracking this customer" on an erase or export to add them.</Empty>
          ) : (
            <>
              <table class="rows">
                <caption class="sr-only">Suppression list, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Added</th>
                    <th scope="col">Identifier</th>
                    <th scope="col">By request</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((s) => (
                    <tr key={s.request_id + s.created_at}>
                      <td data-label="Added">
                        <time dateTime={s.created_at}>{dateTime(s.created_at)}</time>
                      </td>
                      <td data-label="Identifier">{subjectName(s.subject_type)}</td>
                      <td data-label="By request">#{s.request_id}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager pager={pager} next={page.next_cursor} />
            </>
          )
        }
      </Show>
    </section>
  );
}
