// How tracked events are shown, on the Events page and in a visitor's
// timeline: when, which event, the visitor (a link to its page) and the body
// as labelled fields. Bodies come from shops' pages and anyone who knows an
// organisation's id: every value is rendered as text (Preact escapes it), and
// only http(s) URLs become links (ExternalLink), never `javascript:` or
// `data:` ones.
import type { Schemas } from './api.ts';
import { BASE, Link } from './router.ts';
import { ago, date, dateTime, ExternalLink, timeOfDay } from './ui.tsx';

type TrackedEvent = Schemas['TrackedEvent'];
export type EventName = Schemas['EventName'];

/** Every event name, with what it is called in the dashboard (one, and as a filter). */
export const EVENT_NAMES: [EventName, string, string][] = [
  ['view', 'Page view', 'Page views'],
  ['productview', 'Product view', 'Product views'],
  ['categoryview', 'Category view', 'Category views'],
  ['updatecart', 'Added to cart', 'Added to cart'],
  ['removefromcart', 'Removed from cart', 'Removed from cart'],
  ['checkout', 'Checkout', 'Checkouts'],
  ['buy', 'Purchase', 'Purchases'],
];

export function isEventName(s: string): s is EventName {
  return EVENT_NAMES.some(([n]) => n === s);
}

export function eventLabel(name: string): string {
  return EVENT_NAMES.find(([n]) => n === name)?.[1] ?? name;
}

/** A visitor id as the API accepts it (VisitorId in the contract). */
export const VISITOR_ID = /^[A-Za-z0-9._-]{1,64}$/;

const WORDS: Record<string, string> = { id: 'ID', url: 'URL' };

/** `product_url` → "Product URL", `line_items` → "Line items"; any other key as it is, capitalised. */
export function fieldLabel(key: string): string {
  const text = key
    .split('_')
    .filter(Boolean)
    .map((w) => WORDS[w.toLowerCase()] ?? w)
    .join(' ');
  return text ? text[0]!.toUpperCase() + text.slice(1) : key;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Deeper than this, a value is shown as its JSON (the bodies the contract allows are two levels deep). */
const MAX_DEPTH = 3;

function Value({ value, depth }: { value: unknown; depth: number }) {
  if (value === null || value === undefined) return <span class="muted">none</span>;
  if (typeof value === 'string') return /^https?:\/\//i.test(value) ? <ExternalLink url={value} /> : <span class="wrap">{value}</span>;
  if (typeof value === 'number' || typeof value === 'boolean') return <>{String(value)}</>;
  if (depth >= MAX_DEPTH) return <code class="wrap">{JSON.stringify(value)}</code>;
  if (Array.isArray(value)) {
    if (value.length === 0) return <span class="muted">none</span>;
    return (
      <ol class="items">
        {value.map((v, i) => (
          <li key={i}>{isRecord(v) ? <Fields body={v} depth={depth + 1} inline /> : <Value value={v} depth={depth + 1} />}</li>
        ))}
      </ol>
    );
  }
  // what is left of JSON is an object
  return <Fields body={value as Record<string, unknown>} depth={depth + 1} />;
}

/** An event body (or an object in it) as labelled fields; `inline` for the lines of a cart or order. */
export function Fields({ body, depth = 0, inline = false }: { body: Record<string, unknown>; depth?: number; inline?: boolean }) {
  const entries = Object.entries(body);
  if (entries.length === 0) return <span class="muted">no details</span>;
  return (
    <dl class={inline ? 'fields inline' : 'fields'}>
      {entries.map(([key, value]) => (
        <div key={key}>
          <dt title={key}>{fieldLabel(key)}</dt>
          <dd>
            <Value value={value} depth={depth} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

export function visitorHref(orgId: number, coreId: string): string {
  return `${BASE}/organisations/${orgId}/visitors/${encodeURIComponent(coreId)}`;
}

/** Events newest first; `showVisitor` false in a visitor's own timeline. */
export function EventTable({
  events,
  orgId,
  caption,
  showVisitor = true,
}: {
  events: TrackedEvent[];
  orgId: number;
  caption: string;
  showVisitor?: boolean;
}) {
  return (
    <table class="rows events">
      <caption class="sr-only">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Event</th>
          {showVisitor && <th scope="col">Visitor</th>}
          <th scope="col">Details</th>
        </tr>
      </thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.id}>
            <td data-label="Time" class="time">
              <time dateTime={e.received_at} title={`${dateTime(e.received_at, true)} (${ago(e.received_at)})`}>
                <span class="clock">{timeOfDay(e.received_at)}</span> <span class="day">{date(e.received_at)}</span>
              </time>
            </td>
            <td data-label="Event" class="event-name">
              <span>
                <strong>{eventLabel(e.name)}</strong> <code class="muted">{e.name}</code>
              </span>
            </td>
            {showVisitor && (
              <td data-label="Visitor" class="visitor">
                <span>
                  <Link href={visitorHref(orgId, e.core_id)} class="wrap">
                    <code>{e.core_id}</code>
                  </Link>
                  {e.corex_id && <span class="muted small customer wrap">customer {e.corex_id}</span>}
                </span>
              </td>
            )}
            <td data-label="Details" class="details">
              <Fields body={e.body} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
