// What a scalar chart card draws, computed without a DOM (so it is unit-tested, and so a card
// out of view still knows what it holds): per run, the points kept for the chart's width in
// its x window (min/max-preserving, see downsample.ts), raw and smoothed; the figures the card
// publishes as data attributes; each run's point nearest a hovered x (the tooltip).

import quickselect from "quickselect";

import { minMaxIndices } from "../downsample";
import type { Series } from "../series";
import { smooth } from "../smoothing";
import type { XAxis } from "../url";

/** A [min, max] window of the x axis (in the axis' units), or null for everything. */
export type XRange = readonly [number, number] | null;

export interface DrawOptions {
  smoothing: number;
  x: XAxis;
  logY: boolean;
  /** The y range leaves out the lowest and highest 5 % of the values drawn (yExtent). */
  ignoreOutliers: boolean;
  /** Pixel columns of the plot: about 4 points are kept per column. */
  width: number;
  range: XRange;
}

/** One run's line: the kept points, and the run's whole x and smoothed columns (tooltip). */
export interface Trace {
  run: string;
  xs: number[];
  raw: (number | null)[];
  smoothed: (number | null)[] | null;
  series: Series;
  fullX: number[];
  fullSmoothed: number[] | null;
  /** The x of each point in the window whose value is not finite, by kind (the line has a
   * gap there; the chart marks them: a run that went NaN must be seen). */
  nonFinite: { nan: number[]; inf: number[]; negInf: number[] };
}

export interface CardModel {
  traces: Trace[];
  /** Points drawn (kept points of every run, in the window when zoomed). */
  points: number;
  /** The largest step of the runs drawn (null: nothing drawn). */
  lastStep: number | null;
  /** Each run's last value (smoothed when smoothing is on; null when not finite). */
  lastValue: Record<string, number | null>;
  drawn: string[];
}

export function xValues(s: Series, axis: XAxis): number[] {
  if (axis === "step") return s.step;
  if (axis === "wall") return s.wall;
  const start = s.wall[0];
  return s.wall.map((w) => w - start);
}

/** The first index whose x is ≥ value (x ascending). */
export function lowerBound(x: ArrayLike<number>, value: number): number {
  let lo = 0;
  let hi = x.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (x[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index whose x is > value (x ascending). */
export function upperBound(x: ArrayLike<number>, value: number): number {
  let lo = 0;
  let hi = x.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (x[mid] <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The index range [from, to) of the points in the window, with one neighbour each side
 * (so the line runs to the window's edges). */
export function windowIndices(x: ArrayLike<number>, range: XRange): [number, number] {
  if (range === null) return [0, x.length];
  const from = Math.max(0, lowerBound(x, range[0]) - 1);
  const to = Math.min(x.length, upperBound(x, range[1]) + 1);
  return [from, Math.max(from, to)];
}

function shown(v: number, logY: boolean): number | null {
  if (!Number.isFinite(v)) return null;
  // A log scale has no place for 0 or below: such points are gaps.
  return logY && v <= 0 ? null : v;
}

/** The card's drawing of these runs' series. */
export function prepareCard(series: Map<string, Series>, runs: string[], opts: DrawOptions): CardModel {
  const traces: Trace[] = [];
  let points = 0;
  let lastStep: number | null = null;
  const lastValue: Record<string, number | null> = {};
  for (const run of runs) {
    const s = series.get(run);
    if (!s || s.length === 0) continue;
    const fullX = xValues(s, opts.x);
    const fullSmoothed = opts.smoothing > 0 ? smooth(s.value, opts.smoothing) : null;
    const [from, to] = windowIndices(fullX, opts.range);
    const buckets = Math.max(1, Math.round(opts.width));
    // Every point of the window kept (no more than 4 a bucket: minMaxIndices keeps them all,
    // the first paint's case) without copying the window and listing its indices first.
    const keep = to - from <= 4 * buckets ? null : minMaxIndices(fullX.slice(from, to), s.value.slice(from, to), buckets);
    const kept = keep === null ? to - from : keep.length;
    const xs = new Array<number>(kept);
    const raw = new Array<number | null>(kept);
    const smoothed = fullSmoothed ? new Array<number | null>(kept) : null;
    for (let k = 0; k < kept; k++) {
      const i = keep === null ? from + k : keep[k] + from;
      xs[k] = fullX[i];
      raw[k] = shown(s.value[i], opts.logY);
      if (smoothed) smoothed[k] = shown(fullSmoothed![i], opts.logY);
    }
    const nonFinite = { nan: [] as number[], inf: [] as number[], negInf: [] as number[] };
    for (let i = from; i < to; i++) {
      const v = s.value[i];
      if (Number.isFinite(v)) continue;
      (Number.isNaN(v) ? nonFinite.nan : v > 0 ? nonFinite.inf : nonFinite.negInf).push(fullX[i]);
    }
    traces.push({ run, xs, raw, smoothed, series: s, fullX, fullSmoothed, nonFinite });
    points += kept;
    const last = s.step[s.length - 1];
    lastStep = lastStep === null ? last : Math.max(lastStep, last);
    const lv = (fullSmoothed ?? s.value)[s.length - 1];
    lastValue[run] = Number.isFinite(lv) ? lv : null;
  }
  return { traces, points, lastStep, lastValue, drawn: traces.map((t) => t.run) };
}

export interface TooltipRow {
  run: string;
  /** The point's x, in the axis' units. */
  x: number;
  step: number;
  wall: number;
  value: number;
  smoothed: number | null;
}

/** Each drawn run's point nearest to x (its own step there: runs may log different steps). */
export function valuesAt(model: CardModel, x: number): TooltipRow[] {
  const rows: TooltipRow[] = [];
  for (const t of model.traces) {
    const n = t.fullX.length;
    if (n === 0) continue;
    let i = lowerBound(t.fullX, x);
    if (i >= n || (i > 0 && x - t.fullX[i - 1] <= t.fullX[i] - x)) i = Math.max(0, i - 1);
    const s = t.series;
    rows.push({
      run: t.run,
      x: t.fullX[i],
      step: s.step[i],
      wall: s.wall[i],
      value: s.value[i],
      smoothed: t.fullSmoothed ? t.fullSmoothed[i] : null,
    });
  }
  return rows;
}

/** Rows a tooltip lists at most: with more runs it lists those nearest the pointer. */
export const TOOLTIP_MAX_ROWS = 12;

/** The rows a tooltip lists: every one while they fit; else the `max` whose value (smoothed
 * when smoothing is on) is nearest to the pointer's `y` (a value that is not a number last),
 * from the highest value down, as the lines lie; `more` counts the rows left out. */
export function tooltipRows(rows: readonly TooltipRow[], y: number, max = TOOLTIP_MAX_ROWS): { shown: TooltipRow[]; more: number } {
  if (rows.length <= max) return { shown: [...rows], more: 0 };
  const shownValue = (r: TooltipRow): number => r.smoothed ?? r.value;
  const distance = (r: TooltipRow): number => {
    const d = Math.abs(shownValue(r) - y);
    return Number.isFinite(d) ? d : Infinity;
  };
  const nearest = [...rows].sort((a, b) => distance(a) - distance(b)).slice(0, max);
  const order = (r: TooltipRow): number => (Number.isNaN(shownValue(r)) ? -Infinity : shownValue(r));
  nearest.sort((a, b) => order(b) - order(a));
  return { shown: nearest, more: rows.length - max };
}

/** The step range that covers an x window of these series (for fetching finer points):
 * every run's steps inside it and one neighbour each side. */
export function stepRange(series: Iterable<Series>, axis: XAxis, range: readonly [number, number]): [number, number] | null {
  if (axis === "step") return [Math.floor(range[0]), Math.ceil(range[1])];
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of series) {
    if (s.length === 0) continue;
    const [from, to] = windowIndices(xValues(s, axis), range);
    if (to <= from) continue;
    lo = Math.min(lo, s.step[from]);
    hi = Math.max(hi, s.step[to - 1]);
  }
  return Number.isFinite(lo) ? [lo, hi] : null;
}

/** A number as the tooltip shows it: 4 significant digits, exponent for very large/small. */
export function formatValue(v: number | null): string {
  if (v === null || Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : "−∞";
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-4)) return v.toExponential(3);
  return String(Number(v.toPrecision(4)));
}

/** The least and greatest x of the chart's kept points (null without any). */
export function xExtent(model: CardModel): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const t of model.traces) {
    for (const x of t.xs) {
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
  }
  return lo <= hi ? [lo, hi] : null;
}

/** The least and greatest y of the chart's lines (raw and smoothed) at the kept points inside
 * the x window (every kept point without one), and where the lines cross the window's edges:
 * a window between two points (a zoom into a sparse series' stretch) holds no point, but the
 * line through it is drawn, and is in range. Gaps and non-finite values are skipped (and
 * spanned, as the lines are drawn); on a log scale a crossing is interpolated in log space
 * (the line is straight there). null without any.
 *
 * `ignoreOutliers` (TensorBoard's "Ignore outliers in chart scaling"): of those values, only
 * the main lines' (the smoothed ones when smoothing, not the faint raw ones; on a log scale the
 * positive ones), and of them, spikes are left out: a spike runs off the chart instead of
 * flattening the rest of the lines along an edge. TensorBoard's Time Series spans the 5th to
 * the 95th percentile, which cut the top off every curve that starts high and comes down (a
 * learning rate of 0.01 decaying: the axis stopped at 0.008). Here the values below the 5th
 * or above the 95th percentile (of at least 21 values) are only candidates, and of them are
 * left out those that are all of these (see outlierExtent):
 * - far from the rest: past the widest gap of that tail, a gap wider than what is kept spans;
 * - in short bursts: at most 3 points in a row of their line (or 1 % of its points);
 * - of a line that is not monotone: a schedule's start, a monotone curve's, is never left out.
 * Each run's latest values (smoothed and raw) stay in range. */
export function yExtent(model: CardModel, range: XRange, logY = false, ignoreOutliers = false): [number, number] | null {
  if (ignoreOutliers) return percentileExtent(model, range, logY);
  let lo = Infinity;
  let hi = -Infinity;
  const take = (y: number): void => {
    if (y < lo) lo = y;
    if (y > hi) hi = y;
  };
  for (const t of model.traces) {
    for (const ys of t.smoothed ? [t.raw, t.smoothed] : [t.raw]) windowValues(t.xs, ys, range, logY, take);
  }
  return lo <= hi ? [lo, hi] : null;
}

/** A run of consecutive points beyond the percentiles is a spike while at most this long (or
 * 1 % of its line's points in the window, when that is more). */
const SPIKE_POINTS = 3;

/** yExtent without outliers (see yExtent): the main lines' extent, less their spikes. */
function percentileExtent(model: CardModel, range: XRange, logY: boolean): [number, number] | null {
  const values: number[] = [];
  // Each run's latest values in the window, smoothed and raw: always in range (a live chart's
  // current value is the one to read; TensorBoard may cut it off).
  const latest: number[] = [];
  for (const t of model.traces) {
    const ys = t.smoothed ?? t.raw;
    windowValues(t.xs, ys, range, logY, (y) => {
      if (!logY || y > 0) values.push(y);
    });
    // The smoothed line's latest value and the raw one (the value last written).
    for (const line of t.smoothed ? [t.smoothed, t.raw] : [t.raw]) {
      const newest = rightmost(t.xs, line, range, logY);
      if (newest !== null && (!logY || newest > 0)) latest.push(newest);
    }
  }
  if (values.length === 0) return null;
  const last = values.length - 1;
  // Two order statistics, not a sort: a chart of 16 runs holds ~30,000 values, and a sort of
  // them took ~10 ms a card (this runs at every draw, and at every step of a pan). Whole values
  // only (rounded outwards): nothing is left out of fewer than 21.
  const low = Math.floor(0.05 * last);
  const high = Math.ceil(0.95 * last);
  quickselect(values, low);
  // Everything after `low` is at least values[low]: the high one is among them.
  if (high > low) quickselect(values, high, low + 1, last);
  // The tails (at most 5 % of the values each) are on either side of them: sorted, cheaply.
  const scale = logY ? Math.log : (y: number): number => y;
  let bottom = tailEnd(values.slice(0, low), values[low], values[high], scale);
  let top = tailEnd(values.slice(high + 1), values[high], values[low], scale);
  const [cutBottom, cutTop] = [bottom, top];
  // What is left out must be spikes of lines that are not monotone.
  for (const t of model.traces) {
    const [lo, hi] = keptOfLine(t.xs, t.smoothed ?? t.raw, range, logY, cutBottom, cutTop);
    bottom = Math.min(bottom, lo);
    top = Math.max(top, hi);
  }
  return [Math.min(bottom, ...latest), Math.max(top, ...latest)];
}

/** Where the y range ends on a tail's side: `edge` is the percentile's value, `tail` the values
 * beyond it (in any order), `other` the other percentile's. The values past the tail's widest
 * gap (from `edge` on, measured on `scale`: log on a log axis) are outliers when that gap is
 * wider than what would be kept spans (from `other` to the last value before the gap): the
 * range ends before the gap. Otherwise the tail is no more than the rest's continuation (a
 * curve's start, noise), and the range takes it whole. */
export function tailEnd(tail: number[], edge: number, other: number, scale: (y: number) => number): number {
  if (tail.length === 0) return edge;
  const up = edge >= other;
  tail.sort(up ? (a, b) => a - b : (a, b) => b - a);
  let widest = 0;
  let past = -1;
  let previous = scale(edge);
  for (let i = 0; i < tail.length; i++) {
    const at = scale(tail[i]);
    const gap = Math.abs(at - previous);
    if (gap > widest) {
      widest = gap;
      past = i;
    }
    previous = at;
  }
  const end = tail[tail.length - 1];
  if (past < 0) return end;
  const kept = past === 0 ? edge : tail[past - 1];
  return widest > Math.abs(scale(kept) - scale(other)) ? kept : end;
}

/** The least and greatest y of a line's points in the window that ignoring outliers must keep,
 * given the range [bottom, top] its tails would be cut to: every point of a monotone line (a
 * learning-rate schedule, a step schedule), else those of each run of consecutive points beyond
 * the range that is too long to be a spike (a schedule's phase, a plateau). [Infinity,
 * -Infinity] when none. */
function keptOfLine(xs: number[], ys: (number | null)[], range: XRange, logY: boolean, bottom: number, top: number): [number, number] {
  const from = range === null ? 0 : lowerBound(xs, range[0]);
  const to = range === null ? xs.length : upperBound(xs, range[1]);
  let count = 0;
  let rising = true;
  let falling = true;
  let previous = NaN;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = from; i < to; i++) {
    const y = ys[i];
    if (y === null || !Number.isFinite(y) || (logY && y <= 0)) continue;
    count++;
    if (y < previous) rising = false;
    if (y > previous) falling = false;
    previous = y;
    if (y < lo) lo = y;
    if (y > hi) hi = y;
  }
  if (count === 0) return [Infinity, -Infinity];
  if (rising || falling) return [lo, hi];
  // Runs of points beyond the range (a missing point ends a run), the long ones kept.
  const longest = Math.max(SPIKE_POINTS, Math.ceil(0.01 * count));
  let keptLo = Infinity;
  let keptHi = -Infinity;
  let side = 0;
  let length = 0;
  let extreme = 0;
  const close = (): void => {
    if (length > longest) {
      if (side < 0) keptLo = Math.min(keptLo, extreme);
      else keptHi = Math.max(keptHi, extreme);
    }
    side = 0;
    length = 0;
  };
  for (let i = from; i < to; i++) {
    const y = ys[i];
    const usable = y !== null && Number.isFinite(y) && !(logY && y <= 0);
    const now = !usable ? 0 : y < bottom ? -1 : y > top ? 1 : 0;
    if (now !== side) close();
    if (now === 0) continue;
    if (side === 0) {
      side = now;
      extreme = y as number;
    }
    length++;
    extreme = now < 0 ? Math.min(extreme, y as number) : Math.max(extreme, y as number);
  }
  close();
  return [keptLo, keptHi];
}

/** Hands `take` each finite y of a line inside the x window, and the line's y where it
 * crosses the window's edges. */
function windowValues(xs: number[], ys: (number | null)[], range: XRange, logY: boolean, take: (y: number) => void): void {
  const from = range === null ? 0 : lowerBound(xs, range[0]);
  const to = range === null ? xs.length : upperBound(xs, range[1]);
  for (let i = from; i < to; i++) {
    const y = ys[i];
    if (y !== null && Number.isFinite(y)) take(y);
  }
  if (range === null) return;
  for (const edge of range) {
    const y = crossing(xs, ys, edge, logY);
    if (y !== null) take(y);
  }
}

/** A line's y at the right end of the x window: where it crosses the window's right edge, else
 * its last finite point in the window; null when it has none there. */
function rightmost(xs: number[], ys: (number | null)[], range: XRange, logY: boolean): number | null {
  if (range !== null) {
    const y = crossing(xs, ys, range[1], logY);
    if (y !== null) return y;
  }
  const from = range === null ? 0 : lowerBound(xs, range[0]);
  for (let i = (range === null ? xs.length : upperBound(xs, range[1])) - 1; i >= from; i--) {
    const y = ys[i];
    if (y !== null && Number.isFinite(y)) return y;
  }
  return null;
}

/** The line's y at `x` strictly between two of its drawn points (the nearest finite ones each
 * side), or null when no segment spans `x`. */
function crossing(xs: number[], ys: (number | null)[], x: number, logY: boolean): number | null {
  let right = lowerBound(xs, x);
  if (right < xs.length && xs[right] === x) return null; // a point of its own, in the window
  let left = right - 1;
  const finite = (i: number): boolean => {
    const y = ys[i];
    return y !== null && Number.isFinite(y);
  };
  while (left >= 0 && !finite(left)) left--;
  while (right < xs.length && !finite(right)) right++;
  if (left < 0 || right >= xs.length) return null;
  const [x0, x1] = [xs[left], xs[right]];
  let [y0, y1] = [ys[left] as number, ys[right] as number];
  if (logY) [y0, y1] = [Math.log(y0), Math.log(y1)];
  const y = x1 === x0 ? y0 : y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);
  return logY ? Math.exp(y) : y;
}
