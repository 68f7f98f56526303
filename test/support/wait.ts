// Waiting in tests for something to become true: the one polling loop every
// test uses (no fixed sleeps: a test waits for a positive signal, with a
// deadline only as a safety net).

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value (not undefined) or the time is up. */
export async function eventually<T>(
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 10_000,
  what = 'condition',
  intervalMs = 40,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** Waits until `cond()` holds; throws after `timeoutMs`. */
export async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string, intervalMs = 25): Promise<void> {
  await eventually(async () => ((await cond()) ? true : undefined), timeoutMs, what, intervalMs);
}

/** Retries an assertion until it passes; after `timeoutMs` its last failure is thrown. */
export async function passesEventually<T>(check: () => Promise<T>, timeoutMs = 10_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(intervalMs);
    }
  }
}
