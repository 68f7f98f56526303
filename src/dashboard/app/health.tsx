// An integration's endpoint health (Integration.health): a badge, and a note
// that says what happens to deliveries — failing, paused by the circuit
// breaker (until when, and why), or disabled by Trackway (and why).
import type { Schemas } from './api.ts';
import { Badge, Breakable, dateTime, timeOfDay } from './ui.tsx';

type Integration = Schemas['Integration'];
type Health = Integration['health'];

/** Disabled replaces Active/Inactive (it implies inactive); paused and failing come beside it. */
export function StateBadges({ integration: i }: { integration: Integration }) {
  const h = i.health;
  if (h.state === 'disabled') return <Badge tone="bad">Disabled</Badge>;
  return (
    <span class="badges">
      {h.state === 'paused' && <Badge tone="warn">Paused</Badge>}
      {h.state === 'failing' && <Badge tone="warn">Failing</Badge>}
      {i.active ? <Badge tone="ok">Active</Badge> : <Badge tone="off">Inactive</Badge>}
    </span>
  );
}

const lastError = (h: Health) =>
  h.last_error ? (
    <>
      {' '}
      Last error: <span class="wrap">{h.last_error}</span>.
    </>
  ) : null;

/** What the health means for deliveries; nothing when healthy. */
export function HealthNote({ health: h, endpoint }: { health: Health; endpoint?: string }) {
  const to = endpoint ? (
    <>
      <code class="wrap">
        <Breakable text={endpoint} />
      </code>{' '}
    </>
  ) : null;
  if (h.state === 'paused') {
    const until = h.paused_until ?? new Date().toISOString();
    const due = Date.parse(until) <= Date.now();
    return (
      <div class="health warn">
        <p>
          {to}
          <strong>{due ? 'Paused: trying one delivery now.' : `Paused until ${timeOfDay(until)}`}</strong>
          {due ? ' ' : ', '}after {h.consecutive_failures} failed attempts in a row
          {h.failing_since ? ` since ${dateTime(h.failing_since)}` : ''}.{lastError(h)}
        </p>
        <p>Deliveries wait and are not lost: when the pause ends one is tried, and the rest follow as soon as it succeeds.</p>
      </div>
    );
  }
  if (h.state === 'disabled') {
    return (
      <div class="health bad">
        <p>
          {to}
          <strong>Disabled by Trackway{h.disabled_at ? ` on ${dateTime(h.disabled_at)}` : ''}.</strong>
        </p>
        <p class="wrap">{h.disabled_reason}</p>
      </div>
    );
  }
  if (h.state === 'failing') {
    return (
      <div class="health warn">
        <p>
          {to}
          <strong>The last {h.consecutive_failures === 1 ? 'attempt' : `${h.consecutive_failures} attempts`} failed</strong>
          {h.failing_since ? ` (since ${dateTime(h.failing_since)})` : ''}.{lastError(h)} A few more failures in a row pause deliveries.
        </p>
      </div>
    );
  }
  return null;
}
