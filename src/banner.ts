// What `serve` prints once it listens (the tests and the README wait for its
// first line): where it listens, on which database, and the eight addresses
// the README lists, each as a URL that works from this host.
import type { Config } from './config.ts';

/** host:port as the server listens; `0.0.0.0` and `::` are said as "all interfaces". */
export function listenAddress(config: Pick<Config, 'host' | 'port'>, port = config.port): string {
  const all = config.host === '0.0.0.0' || config.host === '::';
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return all ? `${host}:${port} (all interfaces)` : `${host}:${port}`;
}

/**
 * The base of the printed URLs: PUBLIC_URL when it is set, else this host as
 * the server is reached from it: localhost for a server on all interfaces
 * (0.0.0.0 is not an address to browse to), else the address it listens on.
 */
export function bannerBase(config: Pick<Config, 'host' | 'port' | 'publicUrl' | 'publicUrlSet'>, port = config.port): string {
  if (config.publicUrlSet) return config.publicUrl;
  const h = config.host;
  const host = h === '0.0.0.0' || h === '::' ? 'localhost' : h.includes(':') ? `[${h}]` : h;
  return `http://${host}:${port}`;
}

export function bannerLines(config: Pick<Config, 'host' | 'port' | 'publicUrl' | 'publicUrlSet'>, where: string, port = config.port): string[] {
  const base = bannerBase(config, port);
  return [
    `Trackway is listening on ${listenAddress(config, port)} (${where})`,
    `  Platform API  ${base}/v1/rest/{platform}/...`,
    `  Tracking API  ${base}/jsv1/...  (tracker: ${base}/jsv1/tracker.js)`,
    `  Analytics     ${base}/rest/v1/learn/event, ${base}/api/v1/register`,
    `  Dashboard     ${base}/dashboard`,
    `  API docs      ${base}/docs`,
    `  Webhook docs  ${base}/docs/webhooks`,
    `  Contract      ${base}/openapi.json, ${base}/openapi.yaml`,
    `  Operations    ${base}/healthz, ${base}/readyz, ${base}/metrics`,
  ];
}

export function printBanner(config: Config, where: string, extra: string[] = [], port = config.port): void {
  process.stdout.write(['', ...bannerLines(config, where, port), ...extra, ''].join('\n') + '\n');
}
