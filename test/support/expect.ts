// Assertions on error answers that several test files share.
import { expect } from 'chai';

/** Any reply (`Reply<T>` of support/client.ts, whatever its T): the body is read through assertions only. */
type Answer = { status: number; body: unknown; headers: Headers };

/**
 * A 429 in the area's shape (`shape`: the fields that name it), with a
 * Retry-After of 1 s to `windowSeconds`; `message` also checks the message
 * is a string ('string') or non-empty text ('text').
 */
export function expectLimited(r: Answer, shape: Record<string, unknown>, opts: { windowSeconds?: number; message?: 'string' | 'text' } = {}): void {
  expect(r.status, JSON.stringify(r.body)).to.equal(429);
  expect(r.body).to.include(shape);
  if (opts.message === 'string') expect(r.body).to.have.property('message').that.is.a('string');
  if (opts.message === 'text') expect(r.body).to.have.property('message').that.is.a('string').and.not.empty;
  expect(Number(r.headers.get('retry-after'))).to.be.within(1, opts.windowSeconds ?? 60);
}

/** The analytics host's 400/5100 for a field that failed validation (`what` names the case). */
export function expectInvalid(r: Omit<Answer, 'headers'>, what: string): void {
  expect(r.status, what).to.equal(400);
  expect(r.body, what).to.have.property('status', 'failed');
  expect(r.body, what).to.have.property('code', 5100);
  expect(r.body, what).to.have.property('reason').that.is.a('string').and.not.empty;
}
