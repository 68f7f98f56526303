// What `serve` prints once it listens (the tests and the README wait for its
// first line): where it listens, on which database, and where things are.
import type { Config } from './config.ts';

export function printBanner(config: Config, where: string, extra: string[] = []): void {
  const base = config.publicUrl;
  process.stdout.write(
    [
      '',
      `Trackway is listening on ${config.host}:${config.port} (${where})`,
      `  API         ${base}/v1/rest/{platform}/...`,
      `  API docs    ${base}/docs`,
      `  Dashboard   ${base}/dashboard`,
      `  Tracker     ${base}/jsv1/tracker.js`,
      ...extra,
      '',
    ].join('\n') + '\n',
  );
}
