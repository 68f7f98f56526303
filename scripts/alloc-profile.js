// Bytes allocated per request in the service's workers: a preload for
// `npm run bench` (docs/profiles/whole-host.md, "What a view request allocates").
//
//   ALLOC_START=20 ALLOC_DUR=10 NODE_OPTIONS="--import $PWD/scripts/alloc-profile.js" \
//     npm run bench -- --quick --only view --service-cmd "node dist/src/main.js serve"
//
// In each cluster worker of the compiled server (other processes are left
// alone), ALLOC_START seconds after its first request it starts V8's
// sampling heap profiler with every allocation counted (objects collected by
// either collector included, not only what survives), samples every 1,024
// bytes for ALLOC_DUR seconds, counts the requests it served meanwhile, and
// writes ALLOC_DIR/alloc-<pid>.heapprofile (open it in Chrome's DevTools,
// Memory tab) and a line with the bytes per request to stderr.
import cluster from 'node:cluster';
import dc from 'node:diagnostics_channel';
import fs from 'node:fs';
import inspector from 'node:inspector';
import path from 'node:path';
import { setTimeout } from 'node:timers';

if (cluster.isWorker && process.argv[1]?.endsWith(path.join('dist', 'src', 'main.js'))) {
  const startAfter = Number(process.env.ALLOC_START ?? 20) * 1000;
  const duration = Number(process.env.ALLOC_DUR ?? 10) * 1000;
  const dir = process.env.ALLOC_DIR ?? '.';
  let seen = 0;
  let counting = false;
  let counted = 0;
  dc.subscribe('http.server.request.start', () => {
    if (counting) counted++;
    if (++seen === 1) setTimeout(begin, startAfter).unref();
  });
  const session = new inspector.Session();
  session.connect();
  /**
   * @param {string} method
   * @param {object} [params]
   * @returns {Promise<any>}
   */
  const post = (method, params) =>
    new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
  /** @typedef {{ selfSize: number, children?: ProfileNode[] }} ProfileNode */
  /**
   * every byte the profile's samples stand for
   * @param {ProfileNode} node
   * @returns {number}
   */
  const total = (node) => node.selfSize + (node.children ?? []).reduce((n, c) => n + total(c), 0);

  async function begin() {
    await post('HeapProfiler.enable');
    await post('HeapProfiler.startSampling', {
      samplingInterval: 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    counting = true;
    await new Promise((resolve) => setTimeout(resolve, duration));
    counting = false;
    const { profile } = await post('HeapProfiler.stopSampling');
    const file = path.join(dir, `alloc-${process.pid}.heapprofile`);
    fs.writeFileSync(file, JSON.stringify(profile));
    const bytes = total(profile.head);
    process.stderr.write(
      `alloc-profile: worker ${process.pid}: ${counted} requests, ${Math.round(bytes / Math.max(1, counted))} bytes allocated per request (${file})\n`,
    );
  }
}
