// One organisation: the frame every organisation page shares (breadcrumb and
// tabs) and its overview: ids, tracker snippet, activity counts and chart.
import { createContext, type ComponentChildren } from 'preact';
import { useContext, useEffect } from 'preact/hooks';
import { api, call, isMerchant, platform, type Schemas } from './api.ts';
import { BASE, Link } from './router.ts';
import { Badge, Breakable, CopyButton, date, Empty, Show, useAsync } from './ui.tsx';

const OrgContext = createContext<Schemas['OrganisationDetail'] | null>(null);

export function useOrganisation(): Schemas['OrganisationDetail'] {
  return useContext(OrgContext)!;
}

const TABS = [
  ['', 'Overview'],
  ['/integrations', 'Integrations'],
  ['/deliveries', 'Deliveries'],
  ['/visitors', 'Visitors'],
  ['/events', 'Events'],
  ['/privacy', 'Privacy'],
  ['/settings', 'Settings'],
] as const;

export function OrganisationFrame({ orgId, path, children }: { orgId: number; path: string; children: ComponentChildren }) {
  const org = useAsync(
    () => call(api.GET('/v1/rest/{platform_name}/organisations/{org_id}', { params: { path: { platform_name: platform(), org_id: orgId } } })),
    [orgId],
  );
  const base = `${BASE}/organisations/${orgId}`;
  const domain = org.data?.domain;
  useEffect(() => {
    document.title = domain ? `${domain} · Trackway` : 'Trackway dashboard';
  }, [domain]);
  return (
    <>
      <p class="crumbs">
        {isMerchant() ? 'Your organisation' : <Link href={BASE}>Organisations</Link>} <span aria-hidden="true">/</span>{' '}
        <span class="wrap">{domain ?? `#${orgId}`}</span>
      </p>
      <nav class="tabs" aria-label="Organisation">
        {TABS.map(([suffix, label]) => {
          const href = base + suffix;
          const current = suffix === '' ? path === href : path === href || path.startsWith(`${href}/`);
          return (
            <Link key={label} href={href} aria-current={current ? 'page' : undefined}>
              {label}
            </Link>
          );
        })}
      </nav>
      <Show value={org} label="Loading the organisation…">
        {(o) => <OrgContext.Provider value={o}>{children}</OrgContext.Provider>}
      </Show>
    </>
  );
}

function trackerSnippet(orgId: number): string {
  return `<script async src="${location.origin}/jsv1/tracker.js" data-org-id="${orgId}"></script>`;
}

export function Overview({ orgId }: { orgId: number }) {
  const org = useOrganisation();
  const stats = useAsync(
    () => call(api.GET('/v1/rest/{platform_name}/organisations/{org_id}/stats', { params: { path: { platform_name: platform(), org_id: orgId } } })),
    [orgId],
  );
  const snippet = trackerSnippet(org.id);
  return (
    <section>
      <h1 tabIndex={-1} class="wrap">
        <Breakable text={org.domain} />
      </h1>
      {org.organisation_name && <p class="muted">{org.organisation_name}</p>}

      <dl class="facts">
        <div>
          <dt>Organisation ID</dt>
          <dd>
            <code id="org-id">{org.id}</code> <CopyButton text={String(org.id)} what="the organisation ID" />
          </dd>
        </div>
        <div>
          <dt>Token</dt>
          <dd>
            <code id="org-token" class="wrap">
              {org.token}
            </code>{' '}
            <CopyButton text={org.token} what="the organisation token" />
          </dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>
            <time dateTime={org.created_at}>{date(org.created_at)}</time>
          </dd>
        </div>
        <div>
          <dt>Status</dt>
          <dd>{org.is_active ? <Badge tone="ok">Active</Badge> : <Badge tone="off">Inactive</Badge>}</dd>
        </div>
      </dl>

      <h2>Tracker snippet</h2>
      <p class="muted">Paste this into the &lt;head&gt; of every page of the shop.</p>
      <div class="snippet">
        <pre>
          <code id="snippet">{snippet}</code>
        </pre>
        <CopyButton text={snippet} what="the tracker snippet" />
      </div>

      <h2>Activity</h2>
      <Show value={stats} label="Loading activity…">
        {(s) => (
          <>
            <dl class="stats">
              <Stat label="Visitors" day={s.visitors_24h} week={s.visitors_7d} />
              <Stat label="Contacts" day={s.contacts_24h} week={s.contacts_7d} />
              <Stat label="Events" day={s.events_24h} week={s.events_7d} />
            </dl>
            <BotCount day={s.bots_24h} week={s.bots_7d} />
            <HourlyChart hours={s.events_per_hour} />
          </>
        )}
      </Show>
    </section>
  );
}

function Stat({ label, day, week }: { label: string; day: number; week: number }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd class="big">{day.toLocaleString()}</dd>
      <dd>last 24 hours</dd>
      <dd class="muted">{week.toLocaleString()} over 7 days</dd>
    </div>
  );
}

/** Tracking requests kept out as known bots (filter_bots, on the Settings tab), with their reasons. */
function BotCount({ day, week }: { day: Schemas['BotCounts']; week: Schemas['BotCounts'] }) {
  const total = (c: Schemas['BotCounts']) => c.user_agent + c.webdriver;
  return (
    <p class="muted" id="bot-count">
      Bots kept out: {total(day).toLocaleString()} requests in the last 24 hours ({day.user_agent.toLocaleString()} by their user agent,{' '}
      {day.webdriver.toLocaleString()} from automated browsers), {total(week).toLocaleString()} over 7 days.
    </p>
  );
}

const hourLabel = (iso: string) => new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });

/** Events per hour as an inline SVG bar chart, with the numbers in a table for screen readers. */
function HourlyChart({ hours }: { hours: Schemas['HourlyCount'][] }) {
  const total = hours.reduce((n, h) => n + h.count, 0);
  const max = Math.max(1, ...hours.map((h) => h.count));
  const W = hours.length * 10;
  const H = 100;
  return (
    <figure class="chart">
      <figcaption>Events per hour, last 24 hours</figcaption>
      {total === 0 ? (
        <Empty title="No events in the last 24 hours.">Events show up here once the tracker snippet is on the shop's pages.</Empty>
      ) : (
        <>
          <div class="chart-frame">
            <span class="chart-max" aria-hidden="true">
              {max.toLocaleString()}
            </span>
            <svg
              viewBox={`0 0 ${W} ${H}`}
              preserveAspectRatio="none"
              role="img"
              aria-label={`${total.toLocaleString()} events in the last 24 hours, at most ${max.toLocaleString()} in one hour`}
            >
              <line class="grid" x1="0" y1="0.5" x2={W} y2="0.5" />
              {hours.map((h, i) => {
                const bar = (h.count / max) * (H - 2);
                return (
                  <rect key={h.hour} class="bar" x={i * 10 + 1.5} y={H - bar} width="7" height={bar}>
                    <title>{`${hourLabel(h.hour)}: ${h.count.toLocaleString()} events`}</title>
                  </rect>
                );
              })}
              <line class="axis" x1="0" y1={H - 0.5} x2={W} y2={H - 0.5} />
            </svg>
          </div>
          <div class="chart-axis" aria-hidden="true">
            <span>{hourLabel(hours[0]!.hour)}</span>
            <span>{hourLabel(hours[12]!.hour)}</span>
            <span>now</span>
          </div>
          {/* in a clipped block: a table ignores the height and overflow of .sr-only, and its 24 rows made the page scroll */}
          <div class="sr-only">
            <table>
              <caption>Events per hour</caption>
              <tbody>
                {hours.map((h) => (
                  <tr key={h.hour}>
                    <th scope="row">{hourLabel(h.hour)}</th>
                    <td>{h.count}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </figure>
  );
}
