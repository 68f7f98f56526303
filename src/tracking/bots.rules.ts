// Bots kept out (README "Bots"; the organisation's filter_bots, default
// true). A tracking request from a known crawler or headless browser is
// answered exactly as any other (a shop's tracker must never break) but
// stores nothing and notifies no one; it is only counted, by reason
// (bot-counts.service.ts).
//
// - Where: the tracking service marks the item (`bot`, beside `gpc`, in
//   tracking.service.ts base()), so the Koa handlers and the fast path decide
//   alike; keepBotsOut() (bot-counts.service.ts) wraps the ingestor (server.ts buildDeps), the one
//   place both transports hand their items to, and answers a marked item at
//   once without queueing it.
// - `user_agent`: the User-Agent is on isbot's kept list of crawlers and
//   headless browsers (HeadlessChrome included) AND presents as a browser or
//   a crawler (`Mozilla/…`, or names itself a bot, crawler or spider). isbot
//   also lists plain HTTP clients (curl, node, got, python-requests, Go's
//   net/http): those are how shops' servers and the README's walkthrough
//   call the tracking API, so they are not taken for bots. No User-Agent is
//   no signal.
// - `webdriver`: the browser tracker saw navigator.webdriver === true (a
//   browser driven by automation) and sent `?webdriver=1`. A request with
//   both counts as `user_agent`.
import { isbot } from 'isbot';

export type BotReason = 'user_agent' | 'webdriver';
export const BOT_REASONS: readonly BotReason[] = ['user_agent', 'webdriver'];

/** what a browser or a crawler puts in its User-Agent, unlike a plain HTTP client */
const BROWSER_OR_CRAWLER = /^Mozilla\/|bot|crawl|spider|slurp|facebookexternalhit|headless/i;

/** isbot costs a few microseconds a call; User-Agents repeat, so answers are kept (bounded) */
const known = new Map<string, boolean>();
const KNOWN_MAX = 4096;

/** Whether this User-Agent is a known crawler's or headless browser's (not a plain HTTP client's). */
export function isKnownBot(userAgent: string | null | undefined): boolean {
  if (!userAgent) return false;
  let bot = known.get(userAgent);
  if (bot === undefined) {
    bot = BROWSER_OR_CRAWLER.test(userAgent) && isbot(userAgent);
    if (known.size >= KNOWN_MAX) known.clear();
    known.set(userAgent, bot);
  }
  return bot;
}

/**
 * Why the organisation keeps this request out, or undefined when it is
 * stored as usual (not a bot, or filter_bots is off).
 */
export function botReason(client: { userAgent: string; webdriver?: boolean }, policy: { filterBots: boolean }): BotReason | undefined {
  if (!policy.filterBots) return undefined;
  if (isKnownBot(client.userAgent)) return 'user_agent';
  return client.webdriver === true ? 'webdriver' : undefined;
}
