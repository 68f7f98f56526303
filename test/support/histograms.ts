// A prom-client histogram's totals, read from a registry: how many
// observations and their sum, over the series whose labels match.
import type { Histogram, Registry } from 'prom-client';

export async function histogramTotals(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<{ count: number; sum: number }> {
  const h = registry.getSingleMetric(name) as Histogram | undefined;
  if (!h) return { count: 0, sum: 0 };
  const values = (await h.get()).values.filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want));
  const of = (metric: string) => values.find((v) => v.metricName === metric)?.value ?? 0;
  return { count: of(`${name}_count`), sum: of(`${name}_sum`) };
}
