// A tiny history router: every page has a real URL under /dashboard (the
// server answers them all with the app), links are plain anchors.
import { h, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/dashboard';

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  dispatchEvent(new PopStateEvent('popstate'));
}

/** The current URL, updated on navigation. */
export function useLocation(): URL {
  const [url, setUrl] = useState(() => new URL(location.href));
  useEffect(() => {
    const on = () => setUrl(new URL(location.href));
    addEventListener('popstate', on);
    return () => removeEventListener('popstate', on);
  }, []);
  return url;
}

/** Named segments of `pattern` (`/a/:id`) in `path`, or null when it does not match. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/');
  const got = path.replace(/\/+$/, '').split('/');
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (w.startsWith(':')) {
      if (!g) return null;
      try {
        params[w.slice(1)] = decodeURIComponent(g);
      } catch {
        return null;
      }
    } else if (w !== g) return null;
  }
  return params;
}

interface LinkProps {
  href: string;
  class?: string;
  children: ComponentChildren;
  'aria-current'?: 'page' | undefined;
}

/** An anchor that navigates in the app (a modified click still opens a new tab). */
export function Link(props: LinkProps) {
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(props.href);
  };
  return h('a', { ...props, onClick }, props.children);
}
