// Sign in (loginPlatformUser): a platform account with its platform name, or
// a merchant who registered its shop itself (analytics host), which signs in
// under the reserved platform name `merchant` and sees its own organisation.
import { useState } from 'preact/hooks';
import { api, ApiFailure, call, MERCHANT, type Session } from './api.ts';

interface Props {
  notice: string | null;
  /** who was signed in before (after an expired session or a sign-out) */
  last: Pick<Session, 'platform' | 'email'> | null;
  onSignedIn: (s: Session) => void;
}

/** "30 seconds", "1 minute", "15 minutes" */
export function waitFor(seconds: number): string {
  if (seconds < 60) return seconds === 1 ? '1 second' : `${seconds} seconds`;
  const m = Math.ceil(seconds / 60);
  return m === 1 ? '1 minute' : `${m} minutes`;
}

function failureText(f: ApiFailure, merchant: boolean): string {
  if (f.status === 401) return merchant ? 'The email or password is wrong.' : 'The platform name, email or password is wrong.';
  if (f.status === 429) {
    return f.retryAfter !== undefined
      ? `Too many failed sign-ins from this address. Try again in ${waitFor(f.retryAfter)}.`
      : 'Too many failed sign-ins from this address. Try again later.';
  }
  return f.message;
}

export function SignIn({ notice, last, onSignedIn }: Props) {
  const [merchant, setMerchant] = useState(last?.platform === MERCHANT);
  const [platform, setPlatform] = useState(last && last.platform !== MERCHANT ? last.platform : '');
  const [email, setEmail] = useState(last?.email ?? '');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const name = merchant ? MERCHANT : platform.trim();
    try {
      const r = await call(
        api.POST('/v1/rest/{platform_name}/users/login', {
          params: { path: { platform_name: name } },
          body: { email: email.trim(), password },
        }),
      );
      onSignedIn({ platform: name, email: r.user.email, token: r.bearer_token });
    } catch (err) {
      setError(failureText(err as ApiFailure, merchant));
      setBusy(false);
    }
  };

  return (
    <main id="main" class="signin">
      <h1>Trackway</h1>
      <p class="muted">Sign in to see your organisations, tracker and webhooks.</p>
      {notice && (
        <p class="note" role="status">
          {notice}
        </p>
      )}
      <form onSubmit={submit} aria-describedby={error ? 'signin-error' : undefined}>
        <fieldset>
          <legend>I have</legend>
          <label class="check">
            <input type="radio" name="kind" value="platform" checked={!merchant} onChange={() => setMerchant(false)} /> a platform account
          </label>
          <label class="check">
            <input type="radio" name="kind" value="merchant" checked={merchant} onChange={() => setMerchant(true)} /> a shop I registered myself
          </label>
        </fieldset>
        {!merchant && (
          <>
            <label for="platform">Platform name</label>
            <input
              id="platform"
              name="platform"
              required
              autoComplete="organization"
              value={platform}
              onInput={(e) => setPlatform(e.currentTarget.value)}
            />
          </>
        )}
        <label for="email">Email</label>
        <input id="email" name="email" type="email" required autoComplete="username" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <label for="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          required
          autoComplete="current-password"
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
        {merchant && <p class="help">The email and password you registered your shop with.</p>}
        {error && (
          <p id="signin-error" class="field-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
