// The statements pg sends, for tests that count what a path sends: a hook on
// pg.Client.prototype.query. Set it before the server under test connects
// (the pool's clients bind query when they connect), restore it after.
import pg from 'pg';

/** Calls `listener` with the text of every statement any pg client sends, until the returned function restores pg. */
export function onStatements(listener: (text: string, client: pg.Client) => void): () => void {
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string };
    const text = typeof first === 'string' ? first : first?.text;
    if (typeof text === 'string') listener(text, this);
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
  return () => {
    pg.Client.prototype.query = original;
  };
}
