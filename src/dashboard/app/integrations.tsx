// Webhook integrations of one organisation: list, create, edit (PATCH keeps
// the stored auth token unless a new one is typed or removal is asked),
// activate/deactivate, delete with confirmation, signing secret on request,
// "send test" (testIntegration), and the endpoint's health (failing, paused
// by the circuit breaker, disabled by Trackway: health.tsx).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type ApiFailure, call, platform, type Schemas } from './api.ts';
import { HealthNote, StateBadges } from './health.tsx';
import { Breakable, CopyButton, dateTime, Empty, ErrorNote, Pager, Show, useAsync, usePager } from './ui.tsx';

type Integration = Schemas['Integration'];

export function Integrations({ orgId }: { orgId: number }) {
  const pager = usePager(orgId);
  const list = useAsync(
    () =>
      call(
        api.GET('/v1/rest/{platform_name}/integration', {
          params: { path: { platform_name: platform() }, query: { org_id: orgId, cursor: pager.cursor, limit: 50 } },
        }),
      ),
    [orgId, pager.cursor],
  );
  const [creating, setCreating] = useState(false);
  const [message, setMessage] = useState('');
  const done = (text: string) => {
    setMessage(text);
    list.reload();
  };
  return (
    <section>
      <div class="heading-row">
        <h1 tabIndex={-1}>Integrations</h1>
        {!creating && (
          <button type="button" onClick={() => setCreating(true)}>
            New integration
          </button>
        )}
      </div>
      <p class="muted">Webhooks that receive this organisation's contact matches and events.</p>
      <p role="status" class="flash">
        {message}
      </p>
      {creating && (
        <IntegrationForm
          orgId={orgId}
          onCancel={() => setCreating(false)}
          onSaved={() => {
            setCreating(false);
            done('Integration created.');
          }}
        />
      )}
      <Show value={list} label="Loading integrations…">
        {(page) =>
          page.items.length === 0 ? (
            creating ? null : (
              <Empty title="No integrations yet.">Create one to receive contact matches and events at your webhook endpoint.</Empty>
            )
          ) : (
            <>
              <ul class="cards">
                {page.items.map((i) => (
                  <IntegrationCard key={i.id} integration={i} onChanged={done} />
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

function IntegrationForm({
  orgId,
  existing,
  onSaved,
  onCancel,
}: {
  orgId: number;
  existing?: Integration;
  onSaved: () => void;
  onCancel: () => void;
}) {
  const prefix = existing ? `edit-${existing.id}` : 'new';
  const [endpoint, setEndpoint] = useState(existing?.data.endpoint ?? '');
  const [token, setToken] = useState('');
  const [removeToken, setRemoveToken] = useState(false);
  const [timeout, setTimeoutSeconds] = useState(existing?.data.httpTimeout ?? '10');
  const [contacts, setContacts] = useState(existing?.data.do_contacts ?? true);
  const [events, setEvents] = useState(existing?.data.do_events ?? true);
  const [active, setActive] = useState(existing?.active ?? true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);
  const hadToken = existing?.data.authToken !== undefined;

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const data = { endpoint: endpoint.trim(), httpTimeout: String(timeout), do_contacts: contacts, do_events: events };
    const newToken = token.trim() || undefined;
    try {
      if (existing) {
        const authToken = newToken ?? (removeToken ? null : undefined);
        await call(
          api.PATCH('/v1/rest/{platform_name}/integration/{integration_id}', {
            params: { path: { platform_name: platform(), integration_id: existing.id } },
            body: { active, data: authToken === undefined ? data : { ...data, authToken } },
          }),
        );
      } else {
        await call(
          api.POST('/v1/rest/{platform_name}/integration', {
            params: { path: { platform_name: platform() } },
            body: { org_id: orgId, active, type: 'WEBHOOK', data: newToken ? { ...data, authToken: newToken } : data },
          }),
        );
      }
      onSaved();
    } catch (err) {
      setError(err as ApiFailure);
      setBusy(false);
    }
  };

  return (
    <form class="panel" onSubmit={submit} aria-label={existing ? 'Edit integration' : 'New integration'}>
      <h2>{existing ? 'Edit integration' : 'New integration'}</h2>
      <label for={`${prefix}-endpoint`}>Endpoint URL</label>
      <input
        id={`${prefix}-endpoint`}
        type="url"
        required
        placeholder="https://hooks.example.com/trackway"
        value={endpoint}
        onInput={(e) => setEndpoint(e.currentTarget.value)}
      />
      <label for={`${prefix}-token`}>Auth token (optional)</label>
      <input
        id={`${prefix}-token`}
        autoComplete="off"
        spellcheck={false}
        aria-describedby={`${prefix}-token-help`}
        value={token}
        onInput={(e) => setToken(e.currentTarget.value)}
      />
      <p id={`${prefix}-token-help`} class="help">
        {hadToken
          ? `Current token: ${existing.data.authToken}. Leave blank to keep it.`
          : 'Sent as “Authorization: Bearer <token>” with every delivery.'}
      </p>
      {hadToken && (
        <label class="check">
          <input type="checkbox" checked={removeToken} disabled={token.trim() !== ''} onChange={(e) => setRemoveToken(e.currentTarget.checked)} />{' '}
          Remove the current token
        </label>
      )}
      <label for={`${prefix}-timeout`}>Timeout (seconds)</label>
      <input
        id={`${prefix}-timeout`}
        class="short"
        type="number"
        min="1"
        max="30"
        required
        value={timeout}
        onInput={(e) => setTimeoutSeconds(e.currentTarget.value)}
      />
      <fieldset>
        <legend>Send</legend>
        <label class="check">
          <input type="checkbox" checked={contacts} onChange={(e) => setContacts(e.currentTarget.checked)} /> Contact matches
        </label>
        <label class="check">
          <input type="checkbox" checked={events} onChange={(e) => setEvents(e.currentTarget.checked)} /> Events of known contacts
        </label>
      </fieldset>
      <label class="check">
        <input type="checkbox" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} /> Active
      </label>
      {error && <ErrorNote error={error} />}
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : existing ? 'Save changes' : 'Create integration'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function TestResult({ result }: { result: Schemas['IntegrationTestResult'] }) {
  const what = result.status_code !== null ? `HTTP ${result.status_code}` : (result.error ?? 'no response');
  return (
    <div class={`result ${result.delivered ? 'ok' : 'bad'}`}>
      <p>
        <strong>{result.delivered ? 'Test delivered' : 'Test failed'}</strong>: {what} in {result.duration_ms} ms
      </p>
      {result.status_code !== null && result.error && <p>{result.error}</p>}
      {result.response_excerpt && <pre class="excerpt">{result.response_excerpt}</pre>}
    </div>
  );
}

/** The inline "are you sure" of a delete; takes the focus when it opens. */
function ConfirmDelete({ id, busy, onConfirm, onCancel }: { id: number; busy: boolean; onConfirm: () => void; onCancel: () => void }) {
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => button.current?.focus(), []);
  return (
    <div class="confirm" role="alertdialog" aria-labelledby={`confirm-${id}`}>
      <p id={`confirm-${id}`}>Delete this integration? Its pending deliveries are cancelled; this cannot be undone.</p>
      <div class="actions">
        <button type="button" class="danger" disabled={busy} onClick={onConfirm} ref={button}>
          {busy ? 'Deleting…' : 'Yes, delete'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Keep it
        </button>
      </div>
    </div>
  );
}

function IntegrationCard({ integration: i, onChanged }: { integration: Integration; onChanged: (message: string) => void }) {
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [secret, setSecret] = useState(false);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [test, setTest] = useState<Schemas['IntegrationTestResult'] | null>(null);
  const path = { platform_name: platform(), integration_id: i.id };

  const run = async (what: string, action: () => Promise<unknown>, message?: string) => {
    setBusy(what);
    setError(null);
    try {
      await action();
      if (message) onChanged(message);
    } catch (err) {
      setError(err as ApiFailure);
    } finally {
      setBusy(null);
    }
  };

  const toggle = () =>
    run(
      'toggle',
      () => call(api.PATCH('/v1/rest/{platform_name}/integration/{integration_id}', { params: { path }, body: { active: !i.active } })),
      i.active ? 'Integration deactivated.' : 'Integration activated.',
    );
  const remove = () =>
    run('delete', () => call(api.DELETE('/v1/rest/{platform_name}/integration/{integration_id}', { params: { path } })), 'Integration deleted.');
  const sendTest = () =>
    run('test', async () => {
      setTest(null);
      setTest(await call(api.POST('/v1/rest/{platform_name}/integration/{integration_id}/test', { params: { path } })));
    });

  if (editing) {
    return (
      <li class="card">
        <IntegrationForm
          orgId={i.org_id}
          existing={i}
          onCancel={() => setEditing(false)}
          onSaved={() => {
            setEditing(false);
            onChanged('Integration saved.');
          }}
        />
      </li>
    );
  }

  const subscriptions = [i.data.do_contacts && 'contact matches', i.data.do_events && 'events'].filter(Boolean).join(' and ') || 'nothing';
  return (
    <li class="card" aria-label={`Integration ${i.data.endpoint}`}>
      <div class="card-head">
        <code class="wrap endpoint">
          <Breakable text={i.data.endpoint} />
        </code>
        <StateBadges integration={i} />
      </div>
      <HealthNote health={i.health} />
      <dl class="meta">
        <div class="wide">
          <dt>Sends</dt>
          <dd>{subscriptions}</dd>
        </div>
        <div>
          <dt>Timeout</dt>
          <dd>{i.data.httpTimeout} s</dd>
        </div>
        <div>
          <dt>Auth token</dt>
          <dd>{i.data.authToken ?? 'none'}</dd>
        </div>
        <div>
          <dt>Changed</dt>
          <dd>
            <time dateTime={i.modified_at}>{dateTime(i.modified_at)}</time>
          </dd>
        </div>
      </dl>
      {secret && (
        <p class="secret">
          <span>Signing secret:</span> <code class="wrap">{i.signing_secret}</code> <CopyButton text={i.signing_secret} what="the signing secret" />
        </p>
      )}
      <div class="actions">
        <button type="button" class="secondary" disabled={busy !== null} onClick={sendTest}>
          {busy === 'test' ? 'Sending…' : 'Send test'}
        </button>
        <button type="button" class="secondary" onClick={() => setEditing(true)}>
          Edit
        </button>
        <button type="button" class="secondary" disabled={busy !== null} onClick={toggle}>
          {i.active ? 'Deactivate' : 'Activate'}
        </button>
        <button type="button" class="secondary" aria-expanded={secret} onClick={() => setSecret(!secret)}>
          {secret ? 'Hide signing secret' : 'Show signing secret'}
        </button>
        <button type="button" class="danger" onClick={() => setConfirming(true)}>
          Delete
        </button>
      </div>
      {confirming && <ConfirmDelete id={i.id} busy={busy === 'delete'} onConfirm={remove} onCancel={() => setConfirming(false)} />}
      <div role="status">{test && <TestResult result={test} />}</div>
      {error && <ErrorNote error={error} />}
    </li>
  );
}
