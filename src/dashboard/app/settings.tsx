// Trust settings of one organisation: identity verification,
// allowed domains, enforce origin, keeping bots out (filter_bots)
// (updateOrganisationSettings); the identity
// secret on request, copied, rotated after a confirmation
// (rotateIdentitySecret); and ready-to-copy code for the shop's server (Node.js,
// PHP) that computes the identify `hash`, with the tracker call passing it.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiFailure, call, platform, type Schemas } from './api.ts';
import { Badge, CopyButton, ErrorNote, Show, useAsync } from './ui.tsx';

type Organisation = Schemas['OrganisationDetail'];

const NODE_SNIPPET = `// On your server, for the signed-in customer (Node.js)
import { createHmac } from 'node:crypto';

const secret = process.env.TRACKWAY_IDENTITY_SECRET; // the identity secret above

export function trackwayHash(email) {
  return createHmac('sha256', secret).update(email.trim().toLowerCase()).digest('hex');
}

// render into the page: customer.email and trackwayHash(customer.email)`;

const PHP_SNIPPET = `<?php
// On your server, for the signed-in customer (PHP)
$secret = getenv('TRACKWAY_IDENTITY_SECRET'); // the identity secret above
$email = $customer->email;
$hash = hash_hmac('sha256', mb_strtolower(trim($email)), $secret);
?>
<script>
  window.trackway = window.trackway || [];
  trackway.push(['identify', {
    email: <?= json_encode($email) ?>,
    hash: <?= json_encode($hash) ?>
  }]);
</script>`;

const TRACKER_SNIPPET = `<script>
  window.trackway = window.trackway || [];
  // email and hash as your server rendered them for the signed-in customer
  trackway.push(['identify', { email: CUSTOMER_EMAIL, hash: HASH_FROM_YOUR_SERVER }]);
</script>`;

const lines = (text: string) =>
  text
    .split(/[\n,]/)
    .map((l) => l.trim())
    .filter(Boolean);

const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** "/allowed_domains/2" (a JSON Pointer) → "Line 3 (entry): message"; other problems as the API says them. */
function problems(err: ApiFailure, sent: string[]): string[] {
  // the "or null" branch of allowed_domains says nothing useful next to the real problem
  const errors = err.errors.filter((e) => e.message !== 'must be null');
  if (errors.length === 0) return [err.message];
  return errors.map((e) => {
    const m = /^\/allowed_domains\/(\d+)$/.exec(e.path);
    return m ? `Line ${Number(m[1]) + 1} (${sent[Number(m[1])] ?? ''}): ${e.message}` : `${e.path.replace(/^\//, '') || 'request'}: ${e.message}`;
  });
}

export function Settings({ orgId }: { orgId: number }) {
  // read again on every visit: the frame's copy may predate a change made here
  const org = useAsync(
    () => call(api.GET('/v1/rest/{platform_name}/organisations/{org_id}', { params: { path: { platform_name: platform(), org_id: orgId } } })),
    [orgId],
  );
  return (
    <section>
      <h1 tabIndex={-1}>Trust settings</h1>
      <p class="muted">Which sites may feed this organisation's notifications, and how visitors prove who they are.</p>
      <Show value={org} label="Loading the settings…">
        {(o) => <SettingsBody key={o.id} initial={o} />}
      </Show>
    </section>
  );
}

function SettingsBody({ initial }: { initial: Organisation }) {
  const [org, setOrg] = useState(initial);
  const [message, setMessage] = useState('');
  const path = { platform_name: platform(), org_id: org.id };
  return (
    <>
      <p role="status" class="flash">
        {message}
      </p>
      <SettingsForm
        org={org}
        onSaved={(o, text) => {
          setOrg(o);
          setMessage(text);
        }}
        path={path}
      />
      <SecretPanel
        org={org}
        path={path}
        onRotated={(o) => {
          setOrg(o);
          setMessage('Identity secret rotated. Deploy the new secret to your shop’s server now.');
        }}
      />
      <section class="panel" aria-labelledby="code-title">
        <h2 id="code-title">Compute the hash on your server</h2>
        <p class="help">
          The hash is the HMAC-SHA256 of the customer's email, trimmed and lower-cased (without an email: of the phone with spaces, dashes, dots and
          brackets removed), keyed with the identity secret exactly as shown, in lower-case hex. Never compute it in the browser.
        </p>
        <Snippet id="snippet-node" title="Node.js" code={NODE_SNIPPET} what="the Node.js code" />
        <Snippet id="snippet-php" title="PHP" code={PHP_SNIPPET} what="the PHP code" />
        <Snippet id="snippet-identify" title="The tracker call that passes it" code={TRACKER_SNIPPET} what="the tracker call" />
      </section>
    </>
  );
}

function Snippet({ id, title, code, what }: { id: string; title: string; code: string; what: string }) {
  return (
    <>
      <h3 id={`${id}-title`}>{title}</h3>
      <div class="snippet">
        <pre aria-labelledby={`${id}-title`}>
          <code id={id}>{code}</code>
        </pre>
        <CopyButton text={code} what={what} />
      </div>
    </>
  );
}

type Path = { platform_name: string; org_id: number };

function SettingsForm({ org, path, onSaved }: { org: Organisation; path: Path; onSaved: (o: Organisation, message: string) => void }) {
  const [mode, setMode] = useState(org.identity_verification);
  const [domains, setDomains] = useState(org.allowed_domains.join('\n'));
  const [enforce, setEnforce] = useState(org.enforce_origin);
  const [exportUnverified, setExportUnverified] = useState(org.export_unverified);
  const [filterBots, setFilterBots] = useState(org.filter_bots);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string[] | null>(null);

  const save = async (body: Schemas['OrganisationSettingsRequest'], done: string) => {
    setBusy(true);
    setError(null);
    try {
      const o = await call(api.PATCH('/v1/rest/{platform_name}/organisations/{org_id}', { params: { path }, body }));
      setMode(o.identity_verification);
      setDomains(o.allowed_domains.join('\n'));
      setEnforce(o.enforce_origin);
      setExportUnverified(o.export_unverified);
      setFilterBots(o.filter_bots);
      onSaved(o, done);
    } catch (err) {
      setError(err instanceof ApiFailure ? problems(err, lines(domains)) : [String(err)]);
    } finally {
      setBusy(false);
    }
  };

  const submit = (e: Event) => {
    e.preventDefault();
    const body: Schemas['OrganisationSettingsRequest'] = {};
    if (mode !== org.identity_verification) body.identity_verification = mode;
    if (enforce !== org.enforce_origin) body.enforce_origin = enforce;
    if (exportUnverified !== org.export_unverified) body.export_unverified = exportUnverified;
    if (filterBots !== org.filter_bots) body.filter_bots = filterBots;
    const list = lines(domains);
    if (!same(list, org.allowed_domains)) body.allowed_domains = list;
    if (Object.keys(body).length === 0) {
      setError(['Nothing has changed.']);
      return;
    }
    void save(body, 'Settings saved.');
  };

  return (
    <form class="panel settings" onSubmit={submit} aria-label="Trust settings">
      <h2>Identity verification</h2>
      <fieldset aria-describedby="mode-help">
        <legend class="sr-only">Identity verification</legend>
        <label class="check">
          <input type="radio" name="mode" value="optional" checked={mode === 'optional'} onChange={() => setMode('optional')} /> Optional
        </label>
        <label class="check">
          <input type="radio" name="mode" value="required" checked={mode === 'required'} onChange={() => setMode('required')} /> Required
        </label>
      </fieldset>
      <p id="mode-help" class="help">
        Optional: identify calls work without a hash; those with a valid one are marked verified. Required: an identify without a valid hash is
        refused and stores nothing, and visitors are joined only through verified emails and phones. Switch once your shop sends the hash for every
        signed-in customer.
      </p>
      <label class="check">
        <input type="checkbox" checked={exportUnverified} onChange={(e) => setExportUnverified(e.currentTarget.checked)} /> Export activity of
        unverified visitors
      </label>
      <p class="help">
        Event exports say whether the visitor's link to the contact is verified. Turn this off to send only verified ones: what an unverified visitor
        does (a cart, an order id, a category, all text its browser chose) then never reaches your webhooks.
      </p>

      <h2>Allowed domains</h2>
      <label for="allowed-domains">Allowed domains, one per line</label>
      <textarea
        id="allowed-domains"
        rows={Math.min(8, Math.max(3, lines(domains).length + 1))}
        spellcheck={false}
        autoComplete="off"
        aria-describedby="domains-help"
        value={domains}
        onInput={(e) => setDomains(e.currentTarget.value)}
      />
      <p id="domains-help" class="help">
        Host names only (shop.example.com); each also allows its subdomains. Product and cart URLs from any other site are kept with their events but
        never reach notifications. The default is the organisation's own domain, {org.domain}.
      </p>
      <label class="check">
        <input type="checkbox" checked={enforce} onChange={(e) => setEnforce(e.currentTarget.checked)} /> Refuse tracking requests from other sites
        (enforce origin)
      </label>
      <p class="help">With this on, the tracker works only on pages of the allowed domains; requests from anywhere else are refused.</p>

      <h2>Bots</h2>
      <label class="check">
        <input type="checkbox" checked={filterBots} onChange={(e) => setFilterBots(e.currentTarget.checked)} /> Keep known bots out
      </label>
      <p class="help">
        Crawlers and headless browsers (known by their user agent, or a browser driven by automation) get the usual answers, but nothing they send is
        stored or reaches your webhooks; the overview counts them. Plain HTTP clients such as your own server's are not taken for bots.
      </p>
      {error && <ErrorNote error={{ message: error.join(' · ') }} />}
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save settings'}
        </button>
        <button
          type="button"
          class="secondary"
          disabled={busy}
          onClick={() => void save({ allowed_domains: null }, 'Allowed domains reset to the default.')}
        >
          Reset domains to default
        </button>
      </div>
    </form>
  );
}

function SecretPanel({ org, path, onRotated }: { org: Organisation; path: Path; onRotated: (o: Organisation) => void }) {
  const [shown, setShown] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);
  const rotate = async () => {
    setBusy(true);
    setError(null);
    try {
      onRotated(await call(api.POST('/v1/rest/{platform_name}/organisations/{org_id}/identity-secret/rotate', { params: { path } })));
      setConfirming(false);
      setShown(true);
    } catch (err) {
      setError(err as ApiFailure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="panel" aria-labelledby="secret-title">
      <div class="card-head">
        <h2 id="secret-title">Identity secret</h2>
        {org.identity_verification === 'required' ? <Badge tone="ok">Required</Badge> : <Badge tone="off">Optional</Badge>}
      </div>
      <p class="help">
        The key your shop's server signs customer emails with. Keep it on the server: anyone who has it can identify visitors as anyone.
      </p>
      <p class="secret">
        <code id="identity-secret" class="wrap">
          {shown ? org.identity_secret : '•'.repeat(16)}
        </code>{' '}
        <CopyButton text={org.identity_secret} what="the identity secret" />
      </p>
      <div class="actions">
        <button type="button" class="secondary" aria-expanded={shown} onClick={() => setShown(!shown)}>
          {shown ? 'Hide identity secret' : 'Show identity secret'}
        </button>
        <button type="button" class="danger" onClick={() => setConfirming(true)}>
          Rotate secret
        </button>
      </div>
      {confirming && (
        <ConfirmRotate busy={busy} required={org.identity_verification === 'required'} onConfirm={rotate} onCancel={() => setConfirming(false)} />
      )}
      {error && <ErrorNote error={error} />}
    </section>
  );
}

function ConfirmRotate({ busy, required, onConfirm, onCancel }: { busy: boolean; required: boolean; onConfirm: () => void; onCancel: () => void }) {
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => button.current?.focus(), []);
  return (
    <div class="confirm" role="alertdialog" aria-labelledby="confirm-rotate">
      <p id="confirm-rotate">
        Rotate the identity secret? Hashes made with the current one stop matching at once
        {required ? ': identify calls are refused until your server uses the new secret.' : '.'}
      </p>
      <div class="actions">
        <button type="button" class="danger" disabled={busy} onClick={onConfirm} ref={button}>
          {busy ? 'Rotating…' : 'Yes, rotate'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Keep the current secret
        </button>
      </div>
    </div>
  );
}
