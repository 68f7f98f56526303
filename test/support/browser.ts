// Chromium for the browser suites: Debian's chromium driven by
// playwright-core (no browser download). Where no Chromium is installed the
// suite says why and skips, unless TRACKWAY_REQUIRE_CHROMIUM=1 (CI), where it
// fails.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';

/** The real binary first: /usr/bin/chromium is a wrapper script that prints a shell warning. */
export const CHROMIUM_CANDIDATES = ['/usr/lib/chromium/chromium', '/usr/bin/chromium'];

export const SCREENSHOT_DIR = fileURLToPath(new URL('../../test-artifacts/screenshots/', import.meta.url));

export function findChromium(): string | undefined {
  const fromEnv = process.env.TRACKWAY_CHROMIUM;
  if (fromEnv) return existsSync(fromEnv) ? fromEnv : undefined;
  return CHROMIUM_CANDIDATES.find((p) => existsSync(p));
}

/**
 * Launches Chromium for a suite; call from its `before` hook with the mocha
 * context. Without a Chromium: fails when TRACKWAY_REQUIRE_CHROMIUM=1, else
 * prints why and skips the suite. A Chromium that is there but does not start
 * always fails.
 */
export async function launchChromium(ctx: Mocha.Context): Promise<Browser> {
  const executablePath = findChromium();
  if (!executablePath) {
    const where = process.env.TRACKWAY_CHROMIUM ?? CHROMIUM_CANDIDATES.join(' or ');
    if (process.env.TRACKWAY_REQUIRE_CHROMIUM === '1') {
      throw new Error(
        `Chromium is required (TRACKWAY_REQUIRE_CHROMIUM=1) but none was found at ${where}; install it with: apt-get install -y chromium`,
      );
    }
    console.log(
      `      skipped: no Chromium at ${where} (install it with: apt-get install -y chromium; TRACKWAY_REQUIRE_CHROMIUM=1 makes this a failure)`,
    );
    ctx.skip();
  }
  // at least a minute for the browser to start; a hook that asked for more keeps it
  ctx.timeout(Math.max(ctx.timeout(), 60_000));
  return chromium.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** Saves a screenshot to test-artifacts/screenshots/<name>.png and returns its path. */
export async function screenshot(page: Page, name: string, fullPage = false): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage });
  return file;
}
