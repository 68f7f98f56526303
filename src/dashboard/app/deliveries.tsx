// Webhook deliveries of one organisation, newest first, filtered by status,
// each with its attempts; failed (and cancelled) ones can be retried. The
// page refreshes itself every few seconds while it is open and visible.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type ApiFailure, call, platform, type Schemas } from './api.ts';
import { BASE, navigate } from './router.ts';
import { HealthNote } from './health.tsx';
import { Badge, Breakable, dateTime, Empty, ErrorNote, Pager, Show, timeOfDay, useAsync, usePager } from './ui.tsx';

type Delivery = Schemas['Delivery'];
type Integration = Schemas['Integration'];
type Status = Delivery['status'];

const REFRESH_MS = 5000;
const FILTERS: [Status | '', string][] = [
  ['', 'All'],
  ['pending', 'Pending'],
  ['delivered', 'Delivered'],
  ['failed', 'Failed'],
  ['cancelled', 'Cancelled'],
];
const TONE = { pending: 'warn', delivered: 'ok', failed: 'bad', cancelled: 'off' } as const;

export function Deliveries({ orgId, url }: { orgId: number; url: URL }) {
  const raw = url.searchParams.get('status') ?? '';
  const status = FILTERS.some(([s]) => s === raw) ? (raw as Status | '') : '';
  const pager = usePager(status);
  const list = useAsync(
    () =>
      call(
        api.GET('/v1/rest/{platform_name}/organisations/{org_id}/deliveries', {
          params: {
            path: { platform_name: platform(), org_id: orgId },
            query: { status: status || undefined, cursor: pager.cursor, limit: 25 },
          },
        }),
      ),
    [orgId, status, pager.cursor],
  );
  const integrations = useAsync(
    () =>
      call(
        api.GET('/v1/rest/{platform_name}/integration', { params: { path: { platform_name: platform() }, query: { org_id: orgId, limit: 200 } } }),
      ).then((page) => new Map(page.items.map((i) => [i.id, i]))),
    [orgId],
  );
  const troubled = [...(integrations.data?.values() ?? [])].filter((i) => i.health.state === 'paused' || i.health.state === 'disabled');
  const [updated, setUpdated] = useState<string | null>(null);
  const [message, setMessage] = useState('');

  // refresh while open (the endpoints' health too); not while the tab is hidden
  const reload = useRef(list.reload);
  reload.current = () => {
    list.reload();
    integrations.reload();
  };
  useEffect(() => {
    const timer = setInterval(() => {
      if (!document.hidden) reload.current();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  useEffect(() => {
    if (list.data) setUpdated(new Date().toISOString());
  }, [list.data]);

  const base = `${BASE}/organisations/${orgId}/deliveries`;
  return (
    <section>
      <h1 tabIndex={-1}>Deliveries</h1>
      <p class="muted">
        Webhook notifications sent to this organisation's integrations. Refreshes every {REFRESH_MS / 1000} seconds
        {updated ? `; updated ${timeOfDay(updated)}` : ''}.
      </p>
      <div class="filters" role="group" aria-label="Status">
        {FILTERS.map(([value, label]) => (
          <button
            key={label}
            type="button"
            class="chip"
            aria-pressed={status === value}
            onClick={() => navigate(value ? `${base}?status=${value}` : base, { replace: true })}
          >
            {label}
          </button>
        ))}
      </div>
      <p role="status" class="flash">
        {message}
      </p>
      {troubled.length > 0 && (
        <section class="health-list" aria-label="Endpoints not receiving deliveries">
          {troubled.map((i) => (
            <HealthNote key={i.id} health={i.health} endpoint={i.data.endpoint} />
          ))}
        </section>
      )}
      <Show value={list} label="Loading deliveries…">
        {(page) =>
          page.items.length === 0 ? (
            <Empty title={status ? `No ${status} deliveries.` : 'No deliveries yet.'}>
              Deliveries appear when a visitor of this organisation becomes a contact, or a contact does something, and an active integration
              subscribes to it.
            </Empty>
          ) : (
            <>
              <ul class="cards">
                {page.items.map((d) => (
                  <DeliveryCard
                    key={d.id}
                    delivery={d}
                    integration={integrations.data?.get(d.integration_id)}
                    onRetried={() => {
                      setMessage(`Delivery #${d.id} will be sent again.`);
                      list.reload();
                    }}
                  />
                ))}
              </ul>
              <Pager pager={pager} next={page.next_cursor} />
            </>
          )
        }
      </Show>
    </section>
  );
}

function DeliveryCard({ delivery: d, integration, onRetried }: { delivery: Delivery; integration: Integration | undefined; onRetried: () => void }) {
  const endpoint = integration?.data.endpoint;
  const paused = d.status === 'pending' && integration?.health.state === 'paused' ? integration.health : undefined;
  const [open, setOpen] = useState(false);
  const [showPayload, setShowPayload] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);
  const retryable = d.status === 'failed' || d.status === 'cancelled';
  const retry = async () => {
    setBusy(true);
    setError(null);
    try {
      await call(
        api.POST('/v1/rest/{platform_name}/deliveries/{delivery_id}/retry', { params: { path: { platform_name: platform(), delivery_id: d.id } } }),
      );
      onRetried();
    } catch (err) {
      setError(err as ApiFailure);
    } finally {
      setBusy(false);
    }
  };
  const p = d.payload;
  const what = p.medium === 'matched' ? 'Contact match' : p.medium === 'erased' ? 'Contact erased' : `Event: ${p.event}`;
  // a contactErased notice keeps its contact only until it is delivered or given up
  const contact = 'contact' in p ? p.contact : 'redacted';
  const attemptsId = `attempts-${d.id}`;
  const payloadId = `payload-${d.id}`;
  return (
    <li class="card" aria-label={`Delivery ${d.id}`}>
      <div class="card-head">
        <span>
          <strong>{what}</strong> <span class="muted">#{d.id}</span>
        </span>
        <Badge tone={TONE[d.status]}>{d.status}</Badge>
      </div>
      <dl class="meta">
        <div class="wide">
          <dt>Contact</dt>
          <dd class="wrap">
            <Breakable text={contact} />
          </dd>
        </div>
        <div class="wide">
          <dt>To</dt>
          <dd class="wrap">{endpoint ? <Breakable text={endpoint} /> : `integration #${d.integration_id}`}</dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>
            <time dateTime={d.created_at}>{dateTime(d.created_at)}</time>
          </dd>
        </div>
        <div>
          <dt>Attempts</dt>
          <dd>{d.attempts_count}</dd>
        </div>
        {d.next_attempt_at && (
          <div>
            <dt>Next attempt</dt>
            <dd>
              <time dateTime={d.next_attempt_at}>{dateTime(d.next_attempt_at)}</time>
            </dd>
          </div>
        )}
        {paused && (
          <div class="wide">
            <dt>Waiting</dt>
            <dd>
              its endpoint is paused
              {paused.paused_until && Date.parse(paused.paused_until) > Date.now() ? ` until ${timeOfDay(paused.paused_until)}` : ''} after{' '}
              {paused.consecutive_failures} failed attempts in a row
            </dd>
          </div>
        )}
        {d.last_error && (
          <div class="wide">
            <dt>Last error</dt>
            <dd class="wrap">{d.last_error}</dd>
          </div>
        )}
      </dl>
      <div class="actions">
        <button
          type="button"
          class="secondary"
          aria-expanded={open}
          aria-controls={attemptsId}
          disabled={d.attempts.length === 0}
          onClick={() => setOpen(!open)}
        >
          {open ? 'Hide attempts' : `Show attempts (${d.attempts.length})`}
        </button>
        <button type="button" class="secondary" aria-expanded={showPayload} aria-controls={payloadId} onClick={() => setShowPayload(!showPayload)}>
          {showPayload ? 'Hide payload' : 'Show payload'}
        </button>
        {retryable && (
          <button type="button" disabled={busy} onClick={retry}>
            {busy ? 'Retrying…' : 'Retry'}
          </button>
        )}
      </div>
      {error && <ErrorNote error={error} />}
      {showPayload && (
        <pre class="payload" id={payloadId} aria-label={`Payload of delivery ${d.id}`}>
          <code>{JSON.stringify(d.payload, null, 2)}</code>
        </pre>
      )}
      {open && (
        <table class="rows attempts" id={attemptsId}>
          <caption class="sr-only">Attempts of delivery {d.id}</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Status</th>
              <th scope="col">Duration</th>
              <th scope="col">Error</th>
              <th scope="col">Response</th>
            </tr>
          </thead>
          <tbody>
            {d.attempts.map((a, n) => (
              <tr key={n}>
                <td data-label="Time">
                  <time dateTime={a.attempted_at}>{dateTime(a.attempted_at, true)}</time>
                </td>
                <td data-label="Status">{a.status_code ?? '—'}</td>
                <td data-label="Duration">{a.duration_ms} ms</td>
                <td data-label="Error" class="wrap">
                  {a.error ?? '—'}
                </td>
                <td data-label="Response">{a.response_excerpt ? <code class="excerpt">{a.response_excerpt}</code> : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </li>
  );
}
