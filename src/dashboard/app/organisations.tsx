// The platform's organisations: search by domain (`q`), cursor paging, and
// registering a merchant. A merchant session has one organisation: it goes
// straight there.
import { useEffect, useState } from 'preact/hooks';
import { api, call, isMerchant, platform } from './api.ts';
import { RegisterMerchant } from './register-merchant.tsx';
import { BASE, Link, navigate } from './router.ts';
import { Badge, Breakable, date, Empty, Pager, Show, useAsync, usePager } from './ui.tsx';

export function Organisations({ url }: { url: URL }) {
  const q = url.searchParams.get('q')?.trim() ?? '';
  const [text, setText] = useState(q);
  const pager = usePager(q);
  const orgs = useAsync(
    () =>
      call(
        api.GET('/v1/rest/{platform_name}/organisations', {
          params: { path: { platform_name: platform() }, query: { q: q || undefined, cursor: pager.cursor, limit: 25 } },
        }),
      ),
    [q, pager.cursor],
  );

  const [registering, setRegistering] = useState(false);
  const merchant = isMerchant();
  const own = merchant && orgs.data?.items.length === 1 ? orgs.data.items[0]!.id : undefined;
  useEffect(() => {
    if (own !== undefined) navigate(`${BASE}/organisations/${own}`, { replace: true });
  }, [own]);

  const search = (e: Event) => {
    e.preventDefault();
    const t = text.trim();
    navigate(t ? `${BASE}?q=${encodeURIComponent(t)}` : BASE);
  };

  return (
    <section>
      <div class="heading-row">
        <h1 tabIndex={-1}>Organisations</h1>
        {!merchant && !registering && (
          <button type="button" onClick={() => setRegistering(true)}>
            Register a merchant
          </button>
        )}
      </div>
      {registering && <RegisterMerchant onClose={() => setRegistering(false)} />}
      <form class="search" role="search" onSubmit={search}>
        <label for="org-search">Search by domain</label>
        <div class="inline">
          <input id="org-search" type="search" value={text} placeholder="shop.example.com" onInput={(e) => setText(e.currentTarget.value)} />
          <button type="submit">Search</button>
          {q && (
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setText('');
                navigate(BASE);
              }}
            >
              Clear
            </button>
          )}
        </div>
      </form>
      <Show value={orgs} label="Loading organisations…">
        {(page) =>
          page.items.length === 0 ? (
            q ? (
              <Empty title={`No organisation's domain contains “${q}”.`}>Check the spelling, or clear the search.</Empty>
            ) : (
              <Empty title="No organisations yet.">
                {merchant
                  ? 'This account has no organisation.'
                  : 'Organisations appear here once your platform registers a merchant: use “Register a merchant” above, or registerClientUser.'}
              </Empty>
            )
          ) : (
            <>
              <table class="rows">
                <caption class="sr-only">Organisations{q ? ` whose domain contains ${q}` : ''}</caption>
                <thead>
                  <tr>
                    <th scope="col">Domain</th>
                    <th scope="col">Organisation name</th>
                    <th scope="col">Created</th>
                    <th scope="col">Active</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((o) => (
                    <tr key={o.id}>
                      <td data-label="Domain">
                        <Link href={`${BASE}/organisations/${o.id}`} class="wrap">
                          <Breakable text={o.domain} />
                        </Link>
                      </td>
                      <td data-label="Name">{o.organisation_name || <span class="muted">—</span>}</td>
                      <td data-label="Created">
                        <time dateTime={o.created_at}>{date(o.created_at)}</time>
                      </td>
                      <td data-label="Active">{o.is_active ? <Badge tone="ok">Active</Badge> : <Badge tone="off">Inactive</Badge>}</td>
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
