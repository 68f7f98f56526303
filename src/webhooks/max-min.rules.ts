// Max-min fair division (fair-share.rules.ts): each organisation that wants less
// than an equal part of what is left gets what it wants; the rest is split
// equally between the others, never more than `cap` each. Integer parts; the
// remainder of a division goes to the organisations that want the most.

export interface MaxMin<Id = number> {
  shares: Map<Id, number>;
  /** what an organisation wanting more than an equal part gets (the "water level") */
  level: number;
}

export function maxMinShares<Id>(wanting: { id: Id; want: number }[], total: number, cap: number): MaxMin<Id> {
  const sorted = [...wanting].sort((a, b) => a.want - b.want);
  const shares = new Map<Id, number>();
  let left = total;
  let level = Math.min(cap, total);
  for (let i = 0; i < sorted.length; i++) {
    const equal = Math.floor(left / (sorted.length - i));
    const w = sorted[i]!;
    const share = Math.min(w.want, cap, equal);
    if (Math.min(w.want, cap) > equal) level = Math.min(cap, equal);
    shares.set(w.id, share);
    left -= share;
  }
  return { shares, level };
}
