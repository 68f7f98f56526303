// The receiver's guide at /docs/webhooks: what Trackway posts, how to check
// it came from us, and how retries work, with the schedule this deployment
// actually runs.
import type { Config } from '../config.ts';
import { DEFAULT_BREAKER } from './circuit-breaker.rules.ts';
import { userAgent } from './signing.crypto.ts';
import { FAVICON_LINK } from '../http/favicon.ts';

/** Escapes text content (nothing dynamic goes into attributes). */
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** 5000 → "5 s", 300000 → "5 min", 7200000 → "2 h", 150 → "150 ms". */
export function humanDuration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (const [size, unit] of units) if (ms >= size && ms % size === 0) return `${ms / size} ${unit}`;
  for (const [size, unit] of units) if (ms >= size) return `${+(ms / size).toFixed(1)} ${unit}`;
  return `${ms} ms`;
}

const MATCHED = {
  medium: 'matched',
  contact: 'jane.doe@example.com',
  type: 'EMAIL',
  date: '2024-05-14',
  org_id: '42',
  verified: true,
  matched_at: '2024-05-14T16:02:48.551Z',
  visitor: { core_id: 'c-8f2a41', roaming_id: 'r-77b1', corex_id: 'customer-1234' },
  last_addtocart: 'https://shop.example.com/products/linen-shirt',
  last_view: [
    'https://shop.example.com/products/linen-shirt',
    'https://shop.example.com/products/canvas-tote',
    'https://shop.example.com/products/wool-scarf',
  ],
};

const TEST_MATCHED = {
  medium: 'matched',
  contact: 'test.contact@example.invalid',
  type: 'EMAIL',
  date: '2024-05-14',
  org_id: '42',
  verified: false,
  matched_at: '2024-05-14T16:02:48.551Z',
  visitor: { core_id: 'sample-visitor', roaming_id: 'sample-session', corex_id: null },
  last_addtocart: 'https://shop.example.com/products/sample-product',
  last_view: ['https://shop.example.com/products/sample-product'],
  test: true,
};

const EVENT = {
  medium: 'event',
  contact: '+442079460958',
  type: 'PHONE',
  date: '2024-05-14',
  org_id: '42',
  event: 'addtocart',
  event_id: '91827',
  occurred_at: '2024-05-14T16:03:10.204Z',
  source_event: 'updatecart',
  visitor: { core_id: 'c-19d0e7', roaming_id: 'r-03c5', corex_id: null },
  verified: false,
  properties: { cart_url: 'https://shop.example.com/cart', product_id: 42, line_items: [], cart_value: 59.9 },
};

const ERASED = { medium: 'erased', contact: 'jane.doe@example.com', type: 'EMAIL', org_id: '42', date: '2024-05-16' };

const NODE_EXAMPLE = `import http from 'node:http';
import { Webhook } from 'standardwebhooks';

const wh = new Webhook(process.env.TRACKWAY_SIGNING_SECRET); // "whsec_..."
const seen = new Set(); // use your database in production

http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString('utf8'); // verify the raw body, before parsing
    let body;
    try {
      body = wh.verify(raw, req.headers); // checks webhook-signature and that webhook-timestamp is recent
    } catch {
      res.writeHead(401).end();
      return;
    }
    res.writeHead(204).end(); // answer first, work later
    if (body.test === true) return; // a test delivery ("Send test"): verified, but nothing to act on
    if (seen.has(req.headers['webhook-id'])) return; // a retry of something already handled
    seen.add(req.headers['webhook-id']);
    queueForProcessing(body);
  });
}).listen(3000);`;

const MANUAL_RECIPE = `key       = base64_decode(secret without its "whsec_" prefix)
signed    = webhook-id + "." + webhook-timestamp + "." + raw request body
expected  = "v1," + base64(HMAC_SHA256(key, signed))
accept if   any space-separated entry of webhook-signature equals expected
            (compare in constant time)
        and |now - webhook-timestamp| <= 5 minutes`;

export function webhookDocsHtml(config: Config): string {
  const schedule = config.webhookRetrySchedule;
  const steps = schedule.map(humanDuration).join(', ');
  const attempts = schedule.length + 1;
  const ua = userAgent(config.publicUrl);
  const json = (v: unknown) => esc(JSON.stringify(v, null, 2));
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Trackway webhooks: a guide for receivers</title>
  ${FAVICON_LINK}
  <style>
    body { font: 16px/1.55 system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; color: #1d2433; }
    pre { background: #f4f6fa; padding: .8rem 1rem; overflow-x: auto; border-radius: 6px; font-size: 14px; }
    code { font-size: 14px; }
    table { border-collapse: collapse; }
    td, th { border: 1px solid #d6dbe5; padding: .3rem .6rem; text-align: left; vertical-align: top; }
  </style>
</head>
<body>
<h1>Trackway webhooks</h1>
<p>Trackway posts JSON notifications to the <code>endpoint</code> of each active webhook integration.
This page tells a receiver what arrives, how to verify it, and what happens when it fails.
The machine-readable description is the <code>webhooks</code> section of <a href="/openapi.json">/openapi.json</a>
(see also the <a href="/docs">API reference</a>).</p>

<h2 id="kinds">Notifications</h2>
<h3>Contact match (<code>medium: "matched"</code>)</h3>
<p>Sent to integrations with <code>do_contacts: true</code> each time a visitor is linked to an email or phone it
was not linked to before. <code>last_view</code> (up to three product URLs, most recent first) and
<code>last_addtocart</code> are left out when there is no data; they only ever hold URLs on the organisation's
allowed domains (its own domain by default). <code>verified</code> is <code>true</code> when the shop's server vouched
for the contact (identity verification: the identify call carried a valid <code>hash</code>), <code>false</code> when a
browser alone said so: do not send marketing or cart-recovery email to an unverified match before it is confirmed.
Deliveries made before this field existed lack it. <code>matched_at</code> is when the identify call was received
(ISO 8601, UTC, milliseconds) and <code>visitor</code> the tracker's ids of the visitor it was made for.</p>
<pre>${json(MATCHED)}</pre>
<h3>Event export (<code>medium: "event"</code>)</h3>
<p>Sent to integrations with <code>do_events: true</code> for every tracked event of a visitor who is a known
contact, once per contact. <code>event</code> is one of <code>addtocart</code>, <code>view</code>, <code>buy</code>,
<code>removefromcart</code>, <code>checkout</code>, <code>categoryview</code>; <code>date</code> is the UTC day.
<code>event_id</code> identifies the event (the same in every export of it), <code>occurred_at</code> is when it was
received, <code>source_event</code> the tracker's own name (<code>view</code> and <code>productview</code> both export
as <code>view</code>), <code>visitor</code> its ids, and <code>properties</code> the event's fields as the tracker sent
them, without URLs outside the organisation's allowed domains. <code>verified</code> is <code>true</code> when this
contact's link to that visitor is verified (an identify call with a valid <code>hash</code> made or confirmed it), as
for a contact match; <code>false</code> means a browser alone said this visitor is the contact, so every field of
<code>properties</code> (a product title, an order id, a category) is what that browser sent: treat it as untrusted
text and never send it to the customer as theirs. An organisation can keep unverified exports out altogether
(<code>export_unverified: false</code> in its settings); exports made before this field existed lack it.</p>
<p><strong>Ignore fields you do not know</strong>: later versions add fields to these bodies (never remove or change
one); deliveries made by an earlier version lack the newer ones.</p>
<pre>${json(EVENT)}</pre>
<h3>Contact erased (<code>medium: "erased"</code>)</h3>
<p>Sent to integrations with <code>do_contacts: true</code> for each email or phone Trackway erased: the person
asked to be forgotten (an erase request of the merchant, under GDPR art. 17 or the CCPA's right to delete), or
nobody had seen them for the organisation's <code>visitor_retention_days</code>. <strong>Delete or anonymise your
copy of the contact</strong> and what you hold about it; <code>date</code> is the UTC day of the erasure. Trackway
keeps this notification only until it is delivered or given up: then its stored copy loses the contact
(<code>redacted: true</code> in the delivery log), so a failed one cannot be sent again with it.</p>
<pre>${json(ERASED)}</pre>

<h3 id="test-deliveries">Test deliveries</h3>
<p>The integration's "Send test" (in the dashboard, or <code>POST /v1/rest/{platform}/integration/{id}/test</code>)
posts one sample contact match at once, signed like every delivery. <strong>Recognise it</strong> by
<code>"test": true</code> in the body or the header <code>Trackway-Test: true</code>; real notifications carry
neither. Its data are placeholders: the contact is <code>test.contact@example.invalid</code> (a reserved domain, so
no mail can ever reach anyone), the visitor <code>sample-visitor</code>, and the product URLs are on the
organisation's own domain. Verify it as any delivery (it proves the endpoint and the secret work), answer 2xx, and
do not act on it: send no email, create no lead. A test delivery is never retried and is not in the delivery log.</p>
<pre>${json(TEST_MATCHED)}</pre>

<h2 id="headers">Headers</h2>
<table>
  <tr><th>header</th><th>value</th></tr>
  <tr><td><code>Content-Type</code></td><td><code>application/json</code></td></tr>
  <tr><td><code>Authorization</code></td><td><code>Bearer &lt;authToken&gt;</code>, only when the integration has an <code>authToken</code></td></tr>
  <tr><td><code>User-Agent</code></td><td><code>${esc(ua)}</code></td></tr>
  <tr><td><code>webhook-id</code></td><td>unique id of the notification, <strong>the same on every retry</strong></td></tr>
  <tr><td><code>webhook-timestamp</code></td><td>Unix time (seconds) of this attempt</td></tr>
  <tr><td><code>webhook-signature</code></td><td><code>v1,&lt;base64 HMAC-SHA256&gt;</code> (<a href="https://www.standardwebhooks.com/">Standard Webhooks</a>)</td></tr>
  <tr><td><code>Trackway-Test</code></td><td><code>true</code> on a <a href="#test-deliveries">test delivery</a> only</td></tr>
</table>

<h2 id="verify">Verifying signatures</h2>
<p>Each integration has a <code>signing_secret</code> (<code>whsec_…</code>), returned when it is created.
Verify every request against the <em>raw</em> body before trusting it, and reject timestamps more than five
minutes from your clock (replays). In Node, the <code>standardwebhooks</code> package does both:</p>
<pre>${esc(NODE_EXAMPLE)}</pre>
<p>By hand, in any language:</p>
<pre>${esc(MANUAL_RECIPE)}</pre>

<h2 id="respond">Responding</h2>
<p>Answer any <strong>2xx</strong> as soon as the request is verified, and do the work afterwards: an answer must arrive
within the integration's <code>httpTimeout</code> (10 seconds by default, at most 30) or the attempt counts as failed.
The response body is ignored (its first 1 KB is kept in the delivery log). Redirects are not followed.
A slow answer costs as much as a failure: an endpoint whose answers take longer than ${esc(humanDuration(config.webhookShare.slowMs))}
on average gets fewer requests at once (down to one), so its deliveries queue up; answer first and work later.</p>

<h2 id="retries">Retries</h2>
<p>A timeout, a network error, <code>408</code>, <code>409</code>, <code>425</code>, <code>429</code> and any
<code>5xx</code> are retried; any other status (including <code>3xx</code> and other <code>4xx</code>) fails the
delivery at once. This deployment retries after <strong>${esc(steps)}</strong>, each counted from the failure of the
attempt before, with ±10% jitter: at most ${attempts} attempts in all. A <code>Retry-After</code> header (seconds or
an HTTP date) on a retried answer is honoured: the next attempt is not made sooner (a Retry-After longer than
${esc(humanDuration(Math.max(60_000, ...schedule)))} is shortened to that). After the last attempt the delivery is
<code>failed</code>; it can be sent again with <code>POST /v1/rest/{platform}/deliveries/{id}/retry</code> or from the
dashboard, with the same <code>webhook-id</code>. Deactivating or deleting an integration cancels what it has not yet
received; re-activating it sends only what happens afterwards.</p>

<h2 id="failing">An endpoint that keeps failing</h2>
<p>After ${DEFAULT_BREAKER.threshold} failed attempts in a row (any of the failures above, or a non-2xx answer) the
endpoint is <strong>paused</strong>: its deliveries wait, keeping their attempts and place in the retry schedule, and
none is lost or failed because of the pause. When the pause ends (${esc(humanDuration(DEFAULT_BREAKER.cooldownMs))} the
first time), one delivery is sent as a probe: if it succeeds everything resumes; if not, the pause doubles, up to
${esc(humanDuration(DEFAULT_BREAKER.maxCooldownMs))}. ${
    config.webhookDisableAfterMs === undefined
      ? 'This deployment never disables an endpoint for failing.'
      : `An endpoint that accepts no delivery at all for <strong>${esc(humanDuration(config.webhookDisableAfterMs))}</strong> is
<strong>disabled</strong>: its integration becomes inactive, what it had not received is cancelled (and can be sent
again once it is active), and the reason is kept.`
  } The integration's <code>health</code> in the API (and the dashboard) shows all of this; activating the integration
again, or giving it another endpoint, clears it.</p>

<h2 id="idempotency">Duplicates and ordering</h2>
<p>Delivery is <strong>at least once</strong>: after a timeout or a restart of Trackway the same notification can
arrive twice. De-duplicate on <code>webhook-id</code>. Notifications are not guaranteed to arrive in order; use
<code>date</code> and your own state.</p>

<h2 id="network">Network</h2>
<p>Endpoints must be reachable on the public internet: Trackway refuses to connect to loopback, private
(RFC 1918, <code>fc00::/7</code>), link-local, carrier-grade NAT, multicast, reserved and cloud-metadata addresses,
checked on the address it actually connects to after DNS resolution. Such a refusal is recorded on the delivery and
is not retried. ${config.webhookAllowPrivateNetworks ? '<strong>This deployment allows private addresses</strong> (<code>WEBHOOK_ALLOW_PRIVATE_NETWORKS=true</code>).' : 'The operator can allow private addresses with <code>WEBHOOK_ALLOW_PRIVATE_NETWORKS=true</code>.'}</p>
</body>
</html>
`;
}
