// Pure arithmetic of the histogram and distribution views.

import type { ApiAnswer } from "../api_types";

/** A stored value: a number, or TensorBoard's spelling of a non-finite one. */
export function num(v: number | string | null | undefined): number {
  if (typeof v === "number") return v;
  if (v === "Infinity") return Infinity;
  if (v === "-Infinity") return -Infinity;
  return NaN;
}

/** [left, right, count] buckets as the data API answers them (non-finite values spelled). */
export type Bucket = [number | string, number | string, number | string];

/** A histograms tensor's values (TensorDatum.values of /api/v1/tensors: [k, 3] rows of
 * [left, right, count]) as buckets, or null when they are not such rows (a tensor that could
 * not be decoded is {"error": …}). The document leaves `values` untyped (any tensor's, of any
 * shape), so they are checked, not assumed. */
export function asBuckets(values: unknown): Bucket[] | null {
  if (!Array.isArray(values)) return null;
  for (const row of values as unknown[]) {
    if (!Array.isArray(row) || row.length !== 3) return null;
    for (const v of row as unknown[]) if (typeof v !== "number" && typeof v !== "string") return null;
  }
  return values as Bucket[];
}

/** The finite [lo, hi] covering every bucket edge of every histogram, or null (none). */
export function valueRange(histograms: readonly (readonly Bucket[])[]): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const buckets of histograms) {
    for (const [l, r] of buckets) {
      const a = num(l);
      const b = num(r);
      if (Number.isFinite(a)) lo = Math.min(lo, a);
      if (Number.isFinite(b)) hi = Math.max(hi, b);
    }
  }
  if (lo > hi) return null;
  if (lo === hi) return [lo - 0.5, hi + 0.5];
  return [lo, hi];
}

/** The counts of `buckets` on `bins` equal bins over [lo, hi]: a bucket's count is spread
 * over the bins it overlaps in proportion to the overlap (a zero-width bucket goes to the bin
 * holding it), so the total is kept. */
export function rebin(buckets: readonly Bucket[], lo: number, hi: number, bins: number): Float64Array {
  const out = new Float64Array(bins);
  const width = (hi - lo) / bins;
  if (!(width > 0)) return out;
  const binOf = (x: number): number => Math.min(bins - 1, Math.max(0, Math.floor((x - lo) / width)));
  for (const [l, r, c] of buckets) {
    const left = num(l);
    const right = num(r);
    const count = num(c);
    if (!Number.isFinite(count) || count === 0 || !Number.isFinite(left) || !Number.isFinite(right)) continue;
    if (right <= left) {
      out[binOf(left)] += count;
      continue;
    }
    const first = binOf(left);
    const last = binOf(right);
    for (let b = first; b <= last; b++) {
      const bl = lo + b * width;
      const overlap = Math.min(right, bl + width) - Math.max(left, bl);
      if (overlap > 0) out[b] += (count * overlap) / (right - left);
    }
  }
  return out;
}

/** /api/v1/distributions' answer: per step, its histogram's percentiles (basis point, value). */
export type DistributionAnswer = ApiAnswer<"distributions">;

/** The basis points of TensorBoard's distributions (the median, ±1σ, ±2σ, ±3σ of a normal,
 * the extremes) as columns: `[steps, values of basis point 0, ..., of 10000]`, a missing or
 * non-finite value as null (uPlot's gap). */
export function distributionColumns(answer: DistributionAnswer): { basisPoints: number[]; columns: (number | null)[][] } {
  const basisPoints = answer.length ? answer[0].percentiles.map((p) => p.basis_point) : [];
  const columns: (number | null)[][] = [answer.map((d) => d.step)];
  basisPoints.forEach((bp, i) => {
    columns.push(
      answer.map(({ percentiles }) => {
        const found = percentiles[i]?.basis_point === bp ? percentiles[i] : percentiles.find((p) => p.basis_point === bp);
        const v = found ? num(found.value) : NaN;
        return Number.isFinite(v) ? v : null;
      }),
    );
  });
  return { basisPoints, columns };
}

/** The pairs of column indexes (1-based, as uPlot numbers series) that bound the bands, the
 * outermost first: (first, last), (second, second to last), … */
export function bandPairs(count: number): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < Math.floor(count / 2); i++) out.push([count - i, i + 1]);
  return out;
}

/** Round ticks from `lo` to `hi` (a step of 1, 2 or 5 times a power of ten; at most `most` of
 * them, at least 2 when the range is not empty), as a chart's value axis has them: 0, not
 * -5.8e-4; -0.05, 0, 0.05, not -0.069, -0.0291, 0.0108. The step comes back with them (it
 * decides the decimals a label needs). */
export function niceTicks(lo: number, hi: number, most: number): { ticks: number[]; step: number } {
  if (!(hi > lo) || !Number.isFinite(lo) || !Number.isFinite(hi)) return { ticks: Number.isFinite(lo) ? [lo] : [], step: 1 };
  const n = Math.max(2, most);
  const raw = (hi - lo) / n;
  const power = 10 ** Math.floor(Math.log10(raw));
  let step = 10 * power;
  for (const m of [1, 2, 5, 10]) {
    const s = m * power;
    if (Math.floor(hi / s) - Math.ceil(lo / s) + 1 <= n) {
      step = s;
      break;
    }
  }
  const ticks: number[] = [];
  for (let k = Math.ceil(lo / step); k * step <= hi; k++) ticks.push(Number((k * step).toPrecision(12)) || 0);
  if (ticks.length < 2) {
    // A range holding one round value or none (0.00121 to 0.00139): its two ends.
    return { ticks: [lo, hi], step: hi - lo };
  }
  return { ticks, step };
}
