// The time zone of a place when the geo data has none, from the IANA zone.tab
// table in zones.data.ts.
import { ZONES } from './zones.data.ts';

interface Zone {
  lat: number;
  lon: number;
  zone: string;
}

let zonesByCountry: Map<string, Zone[]> | undefined;

/**
 * The time zone for a place when the data has none: the country's only zone,
 * or the zone whose principal city (IANA zone.tab) is nearest.
 */
export function zoneFor(country: string | null, lat: number | null, lon: number | null): string | null {
  if (!country) return null;
  if (!zonesByCountry) {
    zonesByCountry = new Map();
    for (const line of ZONES.split('\n')) {
      const [cc, la, lo, zone] = line.split(' ');
      if (!cc || !zone) continue;
      const list = zonesByCountry.get(cc) ?? [];
      list.push({ lat: Number(la), lon: Number(lo), zone });
      zonesByCountry.set(cc, list);
    }
  }
  const zones = zonesByCountry.get(country);
  if (!zones) return null;
  if (zones.length === 1 || lat === null || lon === null) return zones[0]!.zone;
  const k = Math.cos((lat * Math.PI) / 180);
  let best = zones[0]!;
  let bestD = Infinity;
  for (const z of zones) {
    const dLon = Math.abs(lon - z.lon);
    const dx = Math.min(dLon, 360 - dLon) * k;
    const d = dx * dx + (lat - z.lat) ** 2;
    if (d < bestD) [best, bestD] = [z, d];
  }
  return best.zone;
}
