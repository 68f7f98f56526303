// Assertions on error answers that several test files share.
import { expect } from 'chai';

type Answer = { status: number; body: any; headers: Headers };

/**
 * A 429 in the area's shape (`shape`: the fields that name it), with a
 * Retry-After of 1 s to `windowSeconds`; `message` also checks the message
 * is a string ('string') or non-empty text ('text').
 */
export function expectLimited(r: Answer, shape: Record<string, unknown>, opts: { windowSeconds?: number; message?: 'string' | 'text' } = {}): void {
  expect(r.status, JSON.stringify(r.body)).to.equal(429);
  expect(r.body).to.include(shape);
  if (opts.message === 'string') expect(r.body.message).to.be.a('string');
  if (opts.message === 'text') expect(r.body.message).to.be.a('string').and.not.empty;
  expect(Number(r.headers.get('retry-after'))).to.be.within(1, opts.windowSeconds ?? 60);
}

/** The analytics host's 400/5100 for a field that failed validation (`what` names the case). */
export function expectInvalid(r: Omit<Answer, 'headers'>, what: string): void {
  expect(r.status, what).to.equal(400);
  expect(r.body.status, what).to.equal('failed');
  expect(r.body.code, what).to.equal(5100);
  expect(r.body.reason, what).to.be.a('string').and.not.empty;
}
