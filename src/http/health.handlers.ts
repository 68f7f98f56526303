// getHealth / getReadiness: the process is up; the database answers.
import { pingDatabase } from '../db/database.ts';
import type { Deps } from '../deps.ts';
import type { HandlerMap } from './types.ts';

export function healthHandlers(deps: Deps): HandlerMap<'getHealth' | 'getReadiness'> {
  return {
    getHealth: () => ({ status: 200, body: { status: 'ok' } }),
    getReadiness: async () => {
      try {
        await pingDatabase(deps.db);
        return { status: 200, body: { status: 'ready' } };
      } catch {
        return { status: 503, body: { status: 'unavailable' }, headers: { 'Retry-After': '5' } } as never;
      }
    },
  };
}
