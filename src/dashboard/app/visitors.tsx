// Visitors of one organisation, most recently seen first (all, or only those
// who became contacts), and one visitor: who, where, recent activity and its
// timeline (listEvents?core_id=, shown as on the Events page).
import { api, call, platform, type Schemas } from './api.ts';
import { BASE, Link, navigate } from './router.ts';
import { EventTable } from './event-list.tsx';
import { eventsHref } from './events.tsx';
import { ago, Badge, dateTime, Empty, ExternalLink, Pager, Show, useAsync, usePager } from './ui.tsx';

function place(l: Schemas['Location'] | null): string {
  if (!l) return 'Unknown';
  return [l.city, l.region, l.country_code].filter(Boolean).join(', ') || 'Unknown';
}

function Contacts({ contacts }: { contacts: Schemas['VisitorContact'][] }) {
  if (contacts.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="plain">
      {contacts.map((c) => (
        <li key={c.type + c.value} class="wrap">
          {c.value} <span class="muted">({c.type.toLowerCase()})</span> {c.verified && <Badge tone="ok">verified</Badge>}
        </li>
      ))}
    </ul>
  );
}

export function Visitors({ orgId, url }: { orgId: number; url: URL }) {
  const contactsOnly = url.searchParams.get('contacts') === '1';
  const pager = usePager(contactsOnly);
  const list = useAsync(
    () =>
      call(
        api.GET('/v1/rest/{platform_name}/organisations/{org_id}/visitors', {
          params: { path: { platform_name: platform(), org_id: orgId }, query: { contacts_only: contactsOnly, cursor: pager.cursor, limit: 25 } },
        }),
      ),
    [orgId, contactsOnly, pager.cursor],
  );
  const base = `${BASE}/organisations/${orgId}/visitors`;
  return (
    <section>
      <h1 tabIndex={-1}>Visitors</h1>
      <div class="filters" role="group" aria-label="Show">
        <button type="button" class="chip" aria-pressed={!contactsOnly} onClick={() => navigate(base, { replace: true })}>
          All visitors
        </button>
        <button type="button" class="chip" aria-pressed={contactsOnly} onClick={() => navigate(`${base}?contacts=1`, { replace: true })}>
          Contacts only
        </button>
      </div>
      <Show value={list} label="Loading visitors…">
        {(page) =>
          page.items.length === 0 ? (
            <Empty title={contactsOnly ? 'No contacts yet.' : 'No visitors yet.'}>
              {contactsOnly
                ? 'Visitors become contacts when the shop identifies them with an email or phone number.'
                : 'Visitors appear once the tracker snippet is on the shop and someone opens a page.'}
            </Empty>
          ) : (
            <>
              <table class="rows">
                <caption class="sr-only">{contactsOnly ? 'Contacts' : 'Visitors'}, most recently seen first</caption>
                <thead>
                  <tr>
                    <th scope="col">Visitor</th>
                    <th scope="col">Contacts</th>
                    <th scope="col">Location</th>
                    <th scope="col">Last seen</th>
                    <th scope="col">First seen</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((v) => (
                    <tr key={v.core_id}>
                      <td data-label="Visitor">
                        <Link href={`${base}/${encodeURIComponent(v.core_id)}`} class="wrap">
                          {v.name || v.core_id}
                        </Link>
                      </td>
                      <td data-label="Contacts">
                        <Contacts contacts={v.contacts} />
                      </td>
                      <td data-label="Location">{place(v.location)}</td>
                      <td data-label="Last seen">
                        <time dateTime={v.last_seen} title={dateTime(v.last_seen)}>
                          {ago(v.last_seen)}
                        </time>
                      </td>
                      <td data-label="First seen">
                        <time dateTime={v.first_seen}>{dateTime(v.first_seen)}</time>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager pager={pager} next={page.next_cursor} />
              <GeoAttribution />
            </>
          )
        }
      </Show>
    </section>
  );
}

/** Locations come from DB-IP Lite (CC BY 4.0), which asks for this link wherever they are shown. */
function GeoAttribution({ inline = false }: { inline?: boolean }) {
  const link = <a href="https://db-ip.com">IP Geolocation by DB-IP</a>;
  return inline ? <span class="muted small">({link})</span> : <p class="muted small">Locations: {link}</p>;
}

export function Visitor({ orgId, coreId }: { orgId: number; coreId: string }) {
  const path = { platform_name: platform(), org_id: orgId };
  const visitor = useAsync(
    () => call(api.GET('/v1/rest/{platform_name}/organisations/{org_id}/visitors/{core_id}', { params: { path: { ...path, core_id: coreId } } })),
    [orgId, coreId],
  );
  const pager = usePager(coreId);
  const events = useAsync(
    () =>
      call(
        api.GET('/v1/rest/{platform_name}/organisations/{org_id}/events', {
          params: { path, query: { core_id: coreId, cursor: pager.cursor, limit: 25 } },
        }),
      ),
    [orgId, coreId, pager.cursor],
  );
  if (visitor.error?.status === 404 && visitor.data === undefined) {
    // nothing to try again: say so, and lead back
    return (
      <section>
        <h1 tabIndex={-1}>Visitor not found</h1>
        <div class="state empty" role="alert">
          <p class="empty-title">
            No visitor has the ID <code class="wrap">{coreId}</code> in this organisation.
          </p>
          <p>
            Check the address, or pick one from <Link href={`${BASE}/organisations/${orgId}/visitors`}>all visitors</Link>.
          </p>
        </div>
      </section>
    );
  }
  return (
    <section>
      <p>
        <Link href={`${BASE}/organisations/${orgId}/visitors`}>← All visitors</Link>
      </p>
      <Show value={visitor} label="Loading the visitor…">
        {(v) => (
          <>
            <h1 tabIndex={-1} class="wrap">
              {v.name || 'Anonymous visitor'}
            </h1>
            <dl class="facts">
              <div>
                <dt>Visitor ID</dt>
                <dd>
                  <code class="wrap">{v.core_id}</code>
                </dd>
              </div>
              {v.corex_id && (
                <div>
                  <dt>Shop customer ID</dt>
                  <dd>
                    <code class="wrap">{v.corex_id}</code>
                  </dd>
                </div>
              )}
              <div>
                <dt>Contacts</dt>
                <dd>
                  <Contacts contacts={v.contacts} />
                </dd>
              </div>
              <div>
                <dt>Location</dt>
                <dd>
                  {place(v.location)} <GeoAttribution inline />
                </dd>
              </div>
              <div>
                <dt>First seen</dt>
                <dd>{dateTime(v.first_seen)}</dd>
              </div>
              <div>
                <dt>Last seen</dt>
                <dd>
                  {dateTime(v.last_seen)} <span class="muted">({ago(v.last_seen)})</span>
                </dd>
              </div>
              {v.user_agent && (
                <div>
                  <dt>Browser</dt>
                  <dd class="wrap small">{v.user_agent}</dd>
                </div>
              )}
            </dl>
            <h2>Recent activity</h2>
            {v.recent.last_view.length === 0 && !v.recent.last_addtocart ? (
              <Empty title="No products viewed or added to cart yet." />
            ) : (
              <dl class="facts">
                <div>
                  <dt>Last viewed products</dt>
                  <dd>
                    {v.recent.last_view.length ? (
                      <ol class="plain">
                        {v.recent.last_view.map((u) => (
                          <li key={u}>
                            <ExternalLink url={u} />
                          </li>
                        ))}
                      </ol>
                    ) : (
                      <span class="muted">none</span>
                    )}
                  </dd>
                </div>
                <div>
                  <dt>Last added to cart</dt>
                  <dd>{v.recent.last_addtocart ? <ExternalLink url={v.recent.last_addtocart} /> : <span class="muted">none</span>}</dd>
                </div>
              </dl>
            )}
          </>
        )}
      </Show>
      <div class="heading-row baseline">
        <h2>Timeline</h2>
        <Link href={eventsHref(orgId, { visitor: coreId })}>Open on the Events page</Link>
      </div>
      <Show value={events} label="Loading the timeline…">
        {(page) =>
          page.items.length === 0 ? (
            <Empty title="No events recorded for this visitor." />
          ) : (
            <>
              <EventTable events={page.items} orgId={orgId} caption="Events of this visitor, newest first" showVisitor={false} />
              <Pager pager={pager} next={page.next_cursor} />
            </>
          )
        }
      </Show>
    </section>
  );
}
