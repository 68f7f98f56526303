// Change password (changePassword) for whoever is signed in: a platform
// account or a self-registered merchant. The answer's token replaces the
// session's (every token issued before the change, this tab's included, no
// longer works), so the user stays signed in here and only here.
import { useState } from 'preact/hooks';
import { api, ApiFailure, call, expireSession, loadSession, platform, saveSession } from './api.ts';
import { waitFor } from './sign-in.tsx';

const MIN = 8;
const MAX = 1024;

function failureText(f: ApiFailure): string {
  if (f.status === 401) return 'The current password is wrong.';
  if (f.status === 429) {
    return f.retryAfter !== undefined
      ? `Too many wrong passwords from this address. Try again in ${waitFor(f.retryAfter)}.`
      : 'Too many wrong passwords from this address. Try again later.';
  }
  return f.errors.length > 0 ? f.errors.map((e) => e.message).join(' · ') : f.message;
}

export function ChangePassword() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setDone(false);
    if (next.length < MIN || next.length > MAX) return setError(`The new password must be ${MIN} to ${MAX} characters.`);
    if (next !== repeat) return setError('The new password and its repetition differ.');
    setBusy(true);
    setError(null);
    try {
      const r = await call(
        api.POST('/v1/rest/{platform_name}/users/password', {
          params: { path: { platform_name: platform() } },
          body: { current_password: current, new_password: next },
        }),
      );
      const s = loadSession();
      if (s) saveSession({ ...s, token: r.bearer_token });
      setCurrent('');
      setNext('');
      setRepeat('');
      setDone(true);
    } catch (err) {
      const f = err as ApiFailure;
      // 4010: the session itself is gone (expired, or revoked elsewhere), not the password
      if (f.status === 401 && f.code === 4010) expireSession();
      else setError(failureText(f));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section>
      <h1 tabIndex={-1}>Change password</h1>
      <form class="panel" onSubmit={submit} aria-labelledby="password-title" aria-describedby={error ? 'password-error' : undefined}>
        <h2 id="password-title">Your password</h2>
        <p class="help">Changing it signs out every other session of this account (a stolen one included); you stay signed in here.</p>
        <input type="text" name="username" autoComplete="username" value={loadSession()?.email ?? ''} hidden readOnly />
        <label for="current-password">Current password</label>
        <input
          id="current-password"
          type="password"
          required
          autoComplete="current-password"
          value={current}
          onInput={(e) => setCurrent(e.currentTarget.value)}
        />
        <label for="new-password">New password</label>
        <input
          id="new-password"
          type="password"
          required
          minLength={MIN}
          maxLength={MAX}
          autoComplete="new-password"
          aria-describedby="new-password-help"
          value={next}
          onInput={(e) => setNext(e.currentTarget.value)}
        />
        <p id="new-password-help" class="help">
          {MIN} to {MAX} characters; a few unrelated words make a good one.
        </p>
        <label for="repeat-password">New password again</label>
        <input
          id="repeat-password"
          type="password"
          required
          autoComplete="new-password"
          value={repeat}
          onInput={(e) => setRepeat(e.currentTarget.value)}
        />
        {error && (
          <p id="password-error" class="field-error" role="alert">
            {error}
          </p>
        )}
        {done && (
          <p class="note" role="status">
            Password changed. Every other session of this account is signed out.
          </p>
        )}
        <div class="actions">
          <button type="submit" disabled={busy}>
            {busy ? 'Changing…' : 'Change password'}
          </button>
        </div>
      </form>
    </section>
  );
}
