// What a chart draws of a series: at most about 4 points per bucket, chosen so that a spike
// is never hidden: the range of x is cut into `buckets` equal buckets and each keeps its
// first, lowest, highest and last point (in x order), so the drawn line reaches every extreme.

/** The indices of (x, y) (x ascending) kept for drawing in `buckets` buckets, ascending; all
 * of them when there are no more than 4 × buckets points. */
export function minMaxIndices(x: ArrayLike<number>, y: ArrayLike<number>, buckets: number): number[] {
  const n = x.length;
  if (n <= buckets * 4 || buckets < 1) {
    // A plain loop: Array.from with a mapping function costs far more (the first paint's
    // every series takes this path).
    const all = new Array<number>(n);
    for (let i = 0; i < n; i++) all[i] = i;
    return all;
  }
  const x0 = x[0];
  const span = x[n - 1] - x0;
  const bucketOf = (i: number): number =>
    span > 0 ? Math.min(buckets - 1, Math.floor(((x[i] - x0) / span) * buckets)) : 0;
  const out: number[] = [];
  let i = 0;
  while (i < n) {
    const b = bucketOf(i);
    let lo = i;
    let hi = i;
    let j = i;
    for (; j < n && bucketOf(j) === b; j++) {
      // NaN never wins a comparison: a NaN point is kept only as a bucket's first or last.
      if (y[j] < y[lo]) lo = j;
      if (y[j] > y[hi]) hi = j;
    }
    for (const k of [...new Set([i, lo, hi, j - 1])].sort((a, c) => a - c)) out.push(k);
    i = j;
  }
  return out;
}
