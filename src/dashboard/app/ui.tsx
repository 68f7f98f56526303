// Shared pieces of every page: loading data, the loading / error / empty
// states, copy buttons, paging, badges and date formatting.
import { type ComponentChildren, Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiFailure } from './api.ts';

export interface Async<T> {
  data: T | undefined;
  error: ApiFailure | undefined;
  loading: boolean;
  reload(): void;
}

function asFailure(e: unknown): ApiFailure {
  return e instanceof ApiFailure ? e : new ApiFailure(0, e instanceof Error ? e.message : String(e));
}

/**
 * Data from `load`, loaded again when `deps` change (starting empty) and on
 * `reload()` (keeping what is shown until the answer arrives).
 */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): Async<T> {
  const key = JSON.stringify(deps);
  const [st, setSt] = useState<{ key: string; data?: T; error?: ApiFailure; loading: boolean }>({ key, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setSt((s) => (s.key === key ? { ...s, loading: true } : { key, loading: true }));
    load().then(
      (data) => live && setSt({ key, data, loading: false }),
      (e: unknown) => live && setSt((s) => ({ key, data: s.key === key ? s.data : undefined, error: asFailure(e), loading: false })),
    );
    return () => {
      live = false;
    };
  }, [key, tick]);
  const cur = st.key === key ? st : { key, loading: true, data: undefined, error: undefined };
  return { data: cur.data, error: cur.error, loading: cur.loading, reload: () => setTick((t) => t + 1) };
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p class="state" role="status">
      <span class="spinner" aria-hidden="true" /> {label}
    </p>
  );
}

export function ErrorNote({ error, onRetry }: { error: { message: string }; onRetry?: () => void }) {
  return (
    <div class="state error" role="alert">
      <p>{error.message}</p>
      {onRetry && (
        <button type="button" class="secondary" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="state empty">
      <p class="empty-title">{title}</p>
      {children && <p>{children}</p>}
    </div>
  );
}

/** Loading, error or the content: the one way pages show an Async. */
export function Show<T>({ value, children, label }: { value: Async<T>; label?: string; children: (data: T) => ComponentChildren }) {
  if (value.data !== undefined) {
    return (
      <>
        {value.error && <ErrorNote error={value.error} onRetry={value.reload} />}
        {children(value.data)}
      </>
    );
  }
  if (value.error) return <ErrorNote error={value.error} onRetry={value.reload} />;
  return <Loading label={label} />;
}

export function Badge({ tone, children }: { tone: 'ok' | 'warn' | 'bad' | 'off'; children: ComponentChildren }) {
  return <span class={`badge ${tone}`}>{children}</span>;
}

async function copyText(text: string): Promise<boolean> {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // fall back below
    }
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'offscreen';
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

/** A "Copy" button; says "Copied" (visibly and to screen readers) once done. */
export function CopyButton({ text, what }: { text: string; what: string }) {
  const [done, setDone] = useState<boolean | null>(null);
  useEffect(() => {
    if (done === null) return;
    const t = setTimeout(() => setDone(null), 3000);
    return () => clearTimeout(t);
  }, [done]);
  return (
    <span class="copy">
      <button type="button" class="secondary small" aria-label={`Copy ${what}`} onClick={async () => setDone(await copyText(text))}>
        {done ? 'Copied' : 'Copy'}
      </button>
      <span role="status" class="copy-status">
        {done === true ? `${what[0]!.toUpperCase()}${what.slice(1)} copied` : done === false ? 'Could not copy: select the text and copy it' : ''}
      </span>
    </span>
  );
}

/** Cursor paging: the cursors of the pages before this one; starts over when `key` changes. */
export function usePager(key: unknown) {
  const k = JSON.stringify(key);
  const [st, setSt] = useState<{ k: string; stack: string[] }>({ k, stack: [] });
  const stack = st.k === k ? st.stack : [];
  return {
    cursor: stack[stack.length - 1],
    page: stack.length + 1,
    next: (cursor: string) => setSt({ k, stack: [...stack, cursor] }),
    prev: () => setSt({ k, stack: stack.slice(0, -1) }),
  };
}

export function Pager({ pager, next }: { pager: ReturnType<typeof usePager>; next: string | null }) {
  if (pager.page === 1 && !next) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={pager.page === 1} onClick={pager.prev}>
        Previous
      </button>
      <span>Page {pager.page}</span>
      <button type="button" class="secondary" disabled={!next} onClick={() => next && pager.next(next)}>
        Next
      </button>
    </nav>
  );
}

/** Date and time; `seconds` for things that happen seconds apart (delivery attempts). */
export function dateTime(iso: string, seconds = false): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: seconds ? 'medium' : 'short' });
}

export function date(iso: string): string {
  return new Date(iso).toLocaleDateString(undefined, { dateStyle: 'medium' });
}

export function timeOfDay(iso: string): string {
  return new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** "just now", "5 min ago", "3 h ago", "2 days ago". */
export function ago(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  const d = Math.floor(s / 86400);
  return d === 1 ? '1 day ago' : `${d} days ago`;
}

/** Only http(s) URLs become links (the data comes from shops' pages). */
export function ExternalLink({ url }: { url: string }) {
  if (!/^https?:\/\//i.test(url)) return <span class="wrap">{url}</span>;
  return (
    <a class="wrap" href={url} target="_blank" rel="noopener noreferrer nofollow">
      <Breakable text={url} />
    </a>
  );
}

/** A domain, URL or email that may wrap after its dots and slashes or before its @, rather than anywhere. */
export function Breakable({ text }: { text: string }) {
  const parts = text.split(/(?<=[./])|(?=@)/);
  return (
    <>
      {parts.map((p, i) => (
        <Fragment key={i}>
          {i > 0 && <wbr />}
          {p}
        </Fragment>
      ))}
    </>
  );
}
