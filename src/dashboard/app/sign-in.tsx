// Sign in with platform name, email and password (loginPlatformUser).
import { useState } from 'preact/hooks';
import { api, ApiFailure, call, type Session } from './api.ts';

interface Props {
  notice: string | null;
  /** who was signed in before (after an expired session or a sign-out) */
  last: Pick<Session, 'platform' | 'email'> | null;
  onSignedIn: (s: Session) => void;
}

export function SignIn({ notice, last, onSignedIn }: Props) {
  const [platform, setPlatform] = useState(last?.platform ?? '');
  const [email, setEmail] = useState(last?.email ?? '');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const name = platform.trim();
    try {
      const r = await call(
        api.POST('/v1/rest/{platform_name}/users/login', {
          params: { path: { platform_name: name } },
          body: { email: email.trim(), password },
        }),
      );
      onSignedIn({ platform: name, email: r.user.email, token: r.bearer_token });
    } catch (err) {
      const f = err as ApiFailure;
      setError(f.status === 401 ? 'The platform name, email or password is wrong.' : f.message);
      setBusy(false);
    }
  };

  return (
    <main id="main" class="signin">
      <h1>Trackway</h1>
      <p class="muted">Sign in with your platform account.</p>
      {notice && (
        <p class="note" role="status">
          {notice}
        </p>
      )}
      <form onSubmit={submit} aria-describedby={error ? 'signin-error' : undefined}>
        <label for="platform">Platform name</label>
        <input id="platform" name="platform" required autoComplete="organization" value={platform} onInput={(e) => setPlatform(e.currentTarget.value)} />
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
