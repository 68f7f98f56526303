// The dashboard: sign-in, then the platform's organisations and, per
// organisation, its overview, integrations, deliveries, visitors (each with
// its timeline), events, privacy (requests, suppression list, privacy
// settings) and trust settings; and the signed-in account's password change.
import { type JSX, render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { clearSession, loadSession, onSessionExpired, type Session, saveSession } from './api.ts';
import { Deliveries } from './deliveries.tsx';
import { Events } from './events.tsx';
import { Integrations } from './integrations.tsx';
import { OrganisationFrame, Overview } from './organisation.tsx';
import { Organisations } from './organisations.tsx';
import { ChangePassword } from './password.tsx';
import { Privacy } from './privacy.tsx';
import { BASE, Link, match, navigate, useLocation } from './router.ts';
import { Settings } from './settings.tsx';
import { SignIn } from './sign-in.tsx';
import { Visitor, Visitors } from './visitors.tsx';

function Page({ url }: { url: URL }) {
  const path = url.pathname;
  if (match(BASE, path) || match(`${BASE}/organisations`, path)) return <Organisations url={url} />;
  if (match(`${BASE}/password`, path)) return <ChangePassword />;
  const tabs: [string, (id: number, p: Record<string, string>) => JSX.Element][] = [
    [`${BASE}/organisations/:id`, (id) => <Overview orgId={id} />],
    [`${BASE}/organisations/:id/integrations`, (id) => <Integrations orgId={id} />],
    [`${BASE}/organisations/:id/deliveries`, (id) => <Deliveries orgId={id} url={url} />],
    [`${BASE}/organisations/:id/visitors`, (id) => <Visitors orgId={id} url={url} />],
    [`${BASE}/organisations/:id/visitors/:core`, (id, p) => <Visitor orgId={id} coreId={p.core!} />],
    [`${BASE}/organisations/:id/events`, (id) => <Events orgId={id} url={url} />],
    [`${BASE}/organisations/:id/privacy`, (id) => <Privacy orgId={id} />],
    [`${BASE}/organisations/:id/settings`, (id) => <Settings orgId={id} />],
  ];
  for (const [pattern, view] of tabs) {
    const p = match(pattern, path);
    if (p && /^[1-9][0-9]{0,15}$/.test(p.id!)) {
      const id = Number(p.id);
      return (
        <OrganisationFrame orgId={id} path={path}>
          {view(id, p)}
        </OrganisationFrame>
      );
    }
  }
  return (
    <section>
      <h1 tabIndex={-1}>Page not found</h1>
      <p>
        There is nothing at this address. <Link href={BASE}>Go to your organisations</Link>.
      </p>
    </section>
  );
}

function App() {
  const url = useLocation();
  const [session, setSession] = useState<Session | null>(loadSession);
  const [notice, setNotice] = useState<string | null>(null);
  // who was signed in, to fill in the sign-in form again
  const [last, setLast] = useState<Pick<Session, 'platform' | 'email'> | null>(null);
  const main = useRef<HTMLElement>(null);

  useEffect(
    () =>
      onSessionExpired((was) => {
        setSession(null);
        setLast(was);
        setNotice('Your session has expired. Sign in again to continue.');
      }),
    [],
  );

  // after a navigation, move focus to the new page's heading (for keyboard and screen-reader users)
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.querySelector<HTMLElement>('h1')?.focus();
  }, [url.pathname]);

  if (!session) {
    return (
      <SignIn
        notice={notice}
        last={last}
        onSignedIn={(s) => {
          saveSession(s);
          setNotice(null);
          setSession(s);
        }}
      />
    );
  }

  const signOut = () => {
    clearSession();
    setSession(null);
    setLast(session);
    setNotice('You have signed out.');
    navigate(BASE);
  };

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href={BASE} class="brand">
          Trackway
        </Link>
        <span class="who" title={session.email}>
          <span class="platform">{session.platform}</span> <span class="email">{session.email}</span>
        </span>
        <Link href={`${BASE}/password`} class="small" aria-current={url.pathname === `${BASE}/password` ? 'page' : undefined}>
          Change password
        </Link>
        <button type="button" class="secondary small" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" ref={main}>
        <Page url={url} />
      </main>
    </>
  );
}

const root = document.getElementById('app')!;
root.textContent = ''; // the "Loading the dashboard…" placeholder
render(<App />, root);
