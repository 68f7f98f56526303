// The shared cursor pagination helper (src/http/pagination.ts).
import { expect } from 'chai';
import { ApiError } from '../../src/http/errors.ts';
import { cursorNumber, cursorString, decodeCursor, encodeCursor, pageLimit, toPage } from '../../src/http/pagination.ts';

function code(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (e) {
    return e instanceof ApiError ? e.status * 10000 + Number(e.body.code) : -1;
  }
  return undefined;
}

describe('pagination helper', () => {
  it('clamps limit to 1..200 with a default of 50', () => {
    expect(pageLimit(undefined)).to.equal(50);
    expect(pageLimit('')).to.equal(50);
    expect(pageLimit('abc')).to.equal(50);
    expect(pageLimit('7')).to.equal(7);
    expect(pageLimit(0)).to.equal(1);
    expect(pageLimit(-5)).to.equal(1);
    expect(pageLimit(1000)).to.equal(200);
    expect(pageLimit(undefined, 20)).to.equal(20);
  });

  it('round-trips an opaque base64url cursor bound to its filters', () => {
    const c = encodeCursor({ id: 42, at: '2024-05-14T09:30:02.761Z', x: null }, { org_id: 1 });
    expect(c).to.match(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(c, { org_id: 1 })).to.deep.equal({ id: 42, at: '2024-05-14T09:30:02.761Z', x: null });
    expect(decodeCursor(undefined, { org_id: 1 })).to.equal(undefined);
    expect(decodeCursor('', { org_id: 1 })).to.equal(undefined);
  });

  it('answers anything else with 400/4000', () => {
    const good = encodeCursor({ id: 1 }, { q: 'a' });
    const bad = [
      () => decodeCursor(good, { q: 'b' }),
      () => decodeCursor(good),
      () => decodeCursor('not a cursor!'),
      () => decodeCursor(Buffer.from('[1,2]').toString('base64url')),
      () => decodeCursor(Buffer.from('{"p":{"id":{"$gt":1}},"f":"x"}').toString('base64url')),
      () => decodeCursor(good.slice(0, 5), { q: 'a' }),
      () => cursorNumber({ id: 'x' }, 'id'),
      () => cursorNumber({ id: 1.5 }, 'id'),
      () => cursorNumber({}, 'id'),
      () => cursorString({ id: 1 }, 'id'),
    ];
    for (const fn of bad) expect(code(fn)).to.equal(400 * 10000 + 4000);
  });

  it('keeps limit rows and makes a cursor only when there is a next page', () => {
    const rows = [{ id: 1 }, { id: 2 }, { id: 3 }];
    expect(toPage(rows, 3, (r) => ({ id: r.id }))).to.deep.equal({ rows, next_cursor: null });
    const page = toPage(rows, 2, (r) => ({ id: r.id }), { f: 1 });
    expect(page.rows).to.deep.equal([{ id: 1 }, { id: 2 }]);
    expect(decodeCursor(page.next_cursor, { f: 1 })).to.deep.equal({ id: 2 });
  });
});
