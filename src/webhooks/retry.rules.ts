// What happens after an attempt (docs/design.md "Outbound webhooks"): any 2xx
// delivers; a timeout, a network error, 408, 409, 425, 429 and 5xx are
// retried on the configured schedule (each step counted from the failure
// before, ±10% jitter, never sooner than a Retry-After); anything else, a refused
// address and an unusable URL fail at once. After the last step the delivery is failed.

export type Outcome = { kind: 'delivered' } | { kind: 'retry'; delayMs: number } | { kind: 'failed' };

/** What the sender saw: a status when a response arrived, else an error. */
export interface AttemptSummary {
  statusCode: number | null;
  /** Retry-After, already parsed to milliseconds from now */
  retryAfterMs: number | null;
  /** the target itself is unusable (a refused address, an invalid URL): never retried */
  permanent: boolean;
}

const RETRYABLE_STATUS = new Set([408, 409, 425, 429]);

export function isRetryableStatus(status: number): boolean {
  return RETRYABLE_STATUS.has(status) || (status >= 500 && status <= 599);
}

/** ±10% of the step, uniformly. */
export function jitter(ms: number, random: () => number = Math.random): number {
  return Math.round(ms * (0.9 + 0.2 * random()));
}

/**
 * Retry-After as milliseconds from `now`: delta-seconds or an HTTP date.
 * Unparsable values are ignored (undefined); past dates are 0.
 */
export function parseRetryAfter(raw: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Math.min(Number(value), 10 * 365 * 86_400) * 1000;
  const at = Date.parse(value);
  if (!/[a-z]/i.test(value) || Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * A Retry-After never pushes a retry further out than the longest step of the
 * schedule (or a minute, when every step is shorter): a receiver cannot park
 * deliveries for days with one header.
 */
export function retryAfterCap(schedule: number[]): number {
  return Math.max(60_000, ...schedule);
}

/** Whether a receiver's answer delivers the message: any 2xx status (no answer: not delivered). */
export function delivers(statusCode: number | null): boolean {
  return statusCode !== null && statusCode >= 200 && statusCode <= 299;
}

/**
 * The outcome of attempt number `attemptInSchedule` (1 = the first attempt
 * since the schedule started) given what the sender saw.
 */
export function decide(attempt: AttemptSummary, attemptInSchedule: number, schedule: number[], random: () => number = Math.random): Outcome {
  const { statusCode } = attempt;
  if (delivers(statusCode)) return { kind: 'delivered' };
  if (attempt.permanent) return { kind: 'failed' };
  if (statusCode !== null && !isRetryableStatus(statusCode)) return { kind: 'failed' };
  const step = schedule[attemptInSchedule - 1];
  if (step === undefined) return { kind: 'failed' };
  let delayMs = jitter(step, random);
  if (attempt.retryAfterMs !== null) delayMs = Math.max(delayMs, Math.min(attempt.retryAfterMs, retryAfterCap(schedule)));
  return { kind: 'retry', delayMs };
}
