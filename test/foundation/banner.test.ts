// The start banner: the eight addresses the README lists ("npm start prints
// where everything is"), at a host that works from this machine, and the
// listen address as the log gives it.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { bannerLines } from '../../src/banner.ts';
import { loadConfig } from '../../src/config.ts';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('start banner', () => {
  it('prints every address of the README table, at localhost for a server on all interfaces', () => {
    const lines = bannerLines(loadConfig({}), 'embedded PostgreSQL in ./.trackway');
    expect(lines[0]).to.equal('Trackway is listening on 0.0.0.0:8080 (all interfaces) (embedded PostgreSQL in ./.trackway)');
    const text = lines.join('\n');
    expect(text).to.not.include('http://0.0.0.0');
    // the README's table: every URL in its first column is in the banner
    const table = README.slice(README.indexOf('`npm start` prints where everything is:'), README.indexOf('Stop it with Ctrl-C'));
    const rows = table.split('\n').filter((l) => l.startsWith('| `'));
    expect(rows).to.have.length(8);
    for (const row of rows) {
      const cell = row.split('|')[1]!;
      const [first, ...more] = [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
      const full = first!.startsWith('/') ? `http://localhost:8080${first}` : first!;
      expect(text, row).to.include(full);
      for (const m of more) expect(text, row).to.include(`http://localhost:8080${m}`);
    }
  });

  it('names the address it listens on, never 0.0.0.0 for a server on 127.0.0.1, and PUBLIC_URL when set', () => {
    const local = bannerLines(loadConfig({ HOST: '127.0.0.1', PORT: '9090' }), 'db');
    expect(local[0]).to.equal('Trackway is listening on 127.0.0.1:9090 (db)');
    expect(local.join('\n')).to.include('http://127.0.0.1:9090/dashboard').and.not.include('0.0.0.0').and.not.include('localhost');
    const v6 = bannerLines(loadConfig({ HOST: '::1', PORT: '9090' }), 'db');
    expect(v6.join('\n')).to.include('http://[::1]:9090/docs');
    const pub = bannerLines(loadConfig({ PUBLIC_URL: 'https://track.example.com' }), 'db');
    expect(pub.join('\n')).to.include('https://track.example.com/jsv1/tracker.js').and.include('https://track.example.com/docs/webhooks');
    // a PORT of 0 prints the port actually taken
    expect(bannerLines(loadConfig({ HOST: '127.0.0.1', PORT: '0' }), 'db', 41234)[0]).to.equal('Trackway is listening on 127.0.0.1:41234 (db)');
  });
});
