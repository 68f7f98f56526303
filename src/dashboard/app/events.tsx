// The Events page of one organisation: its tracked events, newest first,
// 25 a page (cursor paging), filtered by event name (`?name=`) and by visitor
// (`?visitor=`, a core_id), all through listEvents. The first page refreshes
// itself every few seconds while it is open and visible.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, call, platform } from './api.ts';
import { EVENT_NAMES, type EventName, EventTable, eventLabel, isEventName, VISITOR_ID, visitorHref } from './event-list.tsx';
import { BASE, Link, navigate } from './router.ts';
import { Empty, Pager, Show, timeOfDay, useAsync, usePager } from './ui.tsx';

const REFRESH_MS = 10_000;

/** The Events page's address with these filters. */
export function eventsHref(orgId: number, filters: { name?: string; visitor?: string }): string {
  const q = new URLSearchParams();
  if (filters.name) q.set('name', filters.name);
  if (filters.visitor) q.set('visitor', filters.visitor);
  const s = q.toString();
  return `${BASE}/organisations/${orgId}/events${s ? `?${s}` : ''}`;
}

export function Events({ orgId, url }: { orgId: number; url: URL }) {
  const raw = url.searchParams.get('name') ?? '';
  const name: EventName | '' = isEventName(raw) ? raw : '';
  const visitor = url.searchParams.get('visitor')?.trim() ?? '';
  const badVisitor = visitor !== '' && !VISITOR_ID.test(visitor);
  const pager = usePager([name, visitor]);
  const list = useAsync(
    () =>
      badVisitor
        ? Promise.resolve(null)
        : call(
            api.GET('/v1/rest/{platform_name}/organisations/{org_id}/events', {
              params: {
                path: { platform_name: platform(), org_id: orgId },
                query: { name: name || undefined, core_id: visitor || undefined, cursor: pager.cursor, limit: 25 },
              },
            }),
          ),
    [orgId, name, visitor, pager.cursor],
  );

  // the first page refreshes while open (a later page stays as it was); not while the tab is hidden
  const [updated, setUpdated] = useState<string | null>(null);
  const reload = useRef(list.reload);
  reload.current = list.reload;
  const live = pager.page === 1 && !badVisitor;
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(() => {
      if (!document.hidden) reload.current();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [live]);
  useEffect(() => {
    if (list.data) setUpdated(new Date().toISOString());
  }, [list.data]);

  const what = name ? (EVENT_NAMES.find(([n]) => n === name)?.[2] ?? name).toLowerCase() : 'events';
  return (
    <section>
      <h1 tabIndex={-1}>Events</h1>
      <p class="muted">
        What visitors did on the shop, newest first.{' '}
        {live ? `The first page refreshes every ${REFRESH_MS / 1000} seconds${updated ? `; updated ${timeOfDay(updated)}` : ''}.` : ''}
      </p>
      <div class="filter-bar">
        <div>
          <label for="events-name">Event</label>
          <select
            id="events-name"
            value={name}
            onChange={(e) => navigate(eventsHref(orgId, { name: e.currentTarget.value, visitor }), { replace: true })}
          >
            <option value="">All events</option>
            {EVENT_NAMES.map(([value, , label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </div>
        <VisitorFilter orgId={orgId} name={name} visitor={visitor} />
      </div>
      {badVisitor ? (
        <div class="state empty" role="alert">
          <p class="empty-title">
            No visitor can have the ID <code class="wrap">{visitor}</code>.
          </p>
          <p>A visitor ID is 1 to 64 letters, digits, dots, dashes or underscores.</p>
        </div>
      ) : (
        <Show value={list} label="Loading events…">
          {(page) =>
            !page || page.items.length === 0 ? (
              <Empty title={`No ${what}${visitor ? ' of this visitor' : ''}${pager.page > 1 ? ' on this page' : ' yet'}.`}>
                {name || visitor
                  ? 'Choose another event or visitor, or show them all.'
                  : 'Events appear once the tracker snippet is on the shop and someone opens a page.'}
              </Empty>
            ) : (
              <>
                <EventTable
                  events={page.items}
                  orgId={orgId}
                  showVisitor={!visitor}
                  caption={`${name ? eventLabel(name) : 'Events'}${visitor ? ` of visitor ${visitor}` : ''}, newest first, page ${pager.page}`}
                />
                <Pager pager={pager} next={page.next_cursor} />
              </>
            )
          }
        </Show>
      )}
    </section>
  );
}

/** The visitor filter: a core_id typed in (checked before it is asked for), or the one the page shows. */
function VisitorFilter({ orgId, name, visitor }: { orgId: number; name: string; visitor: string }) {
  const [text, setText] = useState(visitor);
  const [problem, setProblem] = useState('');
  useEffect(() => {
    setText(visitor);
    setProblem('');
  }, [visitor]);
  const submit = (e: Event) => {
    e.preventDefault();
    const t = text.trim();
    if (t && !VISITOR_ID.test(t)) {
      setProblem('A visitor ID is 1 to 64 letters, digits, dots, dashes or underscores.');
      return;
    }
    setProblem('');
    navigate(eventsHref(orgId, { name, visitor: t }));
  };
  return (
    <form class="visitor-filter" role="search" aria-label="Events of one visitor" onSubmit={submit} noValidate>
      <label for="events-visitor">Visitor ID</label>
      <div class="inline">
        <input
          id="events-visitor"
          type="search"
          value={text}
          autoComplete="off"
          spellcheck={false}
          placeholder="c7f1d2a9-3b4e-4f7a-9c21-5e8d0b6a4f13"
          aria-invalid={problem ? true : undefined}
          aria-describedby={problem ? 'events-visitor-problem' : undefined}
          onInput={(e) => setText(e.currentTarget.value)}
        />
        <button type="submit">Filter</button>
        {visitor && (
          <button type="button" class="secondary" onClick={() => navigate(eventsHref(orgId, { name }))}>
            All visitors
          </button>
        )}
      </div>
      {problem && (
        <p id="events-visitor-problem" class="field-error" role="alert">
          {problem}
        </p>
      )}
      {visitor && !problem && VISITOR_ID.test(visitor) && (
        <p class="help">
          Only the events of visitor{' '}
          <Link href={visitorHref(orgId, visitor)} class="wrap">
            {visitor}
          </Link>
          .
        </p>
      )}
    </form>
  );
}
