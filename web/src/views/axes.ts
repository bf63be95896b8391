// Numeric axes of the dashboard's uPlot charts: short tick labels (./ticks), and a y axis as
// wide as its longest label. uPlot's y axis is 50 px whatever it holds, so "-1,000,000,000" or
// "1.0e-6" lost their first characters under the card's edge.

import uPlot from "uplot";

import { logTickLabels, tickLabels } from "./ticks";

/** uPlot's own y axis width, kept as the least. */
const MIN_SIZE = 50;
/** Room beside the labels (uPlot's defaults: ticks 10 px, gap 5 px) plus a little air. */
const TICKS = 10;
const GAP = 5;
const AIR = 4;

/** Tick labels: compact for very large or tiny ticks, else uPlot's own. */
export function axisValues(_u: uPlot, splits: number[], _axis: number, _space: number, incr: number): string[] {
  return tickLabels(splits, incr) ?? splits.map((v) => (v == null ? "" : uPlot.fmtNum(v)));
}

/** The width of a y axis: its longest label, measured in the axis's own font. */
export function axisSize(u: uPlot, values: string[] | null, axisIdx: number): number {
  if (!values || values.length === 0) return MIN_SIZE;
  const axis = u.axes[axisIdx];
  // Once the chart exists, uPlot holds the font as [font scaled to device pixels, size, css size].
  const font = axis.font as unknown as string | readonly [string, number, number] | undefined;
  const ctx = u.ctx;
  ctx.save();
  if (Array.isArray(font)) ctx.font = font[0];
  else if (typeof font === "string") ctx.font = font;
  let widest = 0;
  for (const v of values) widest = Math.max(widest, ctx.measureText(v).width);
  ctx.restore();
  const css = Array.isArray(font) ? widest / uPlot.pxRatio : widest;
  return Math.max(MIN_SIZE, Math.ceil(css + TICKS + GAP + AIR));
}

/** A numeric y axis; `log`: its scale is a log scale over a range of logLimits (see logSplits),
 * its ticks each labelled by their own magnitude (logTickLabels), and `onTicks` hears each set
 * of ticks made with their labels (tests read them: the canvas is pixels). */
export function numericY(log = false, onTicks?: (ticks: number[], labels: string[]) => void): uPlot.Axis {
  if (!log) return { values: axisValues, size: axisSize };
  return {
    values: (_u, splits) => {
      const labels = logTickLabels(splits);
      onTicks?.(splits, labels);
      return labels;
    },
    size: axisSize,
    splits: (u, _axis, min, max) => logSplits(min, max, u.bbox.height / uPlot.pxRatio),
    // Every tick is labelled: logSplits spaces them (uPlot's own filter expects whole decades).
    filter: (_u, splits) => splits,
  };
}

/** Pixels a y tick label needs, at the least. */
const TICK_ROOM = 28;

/** The range of a log y axis over lines from `lo` to `hi` (both > 0): their own extent, padded
 * by 5 % of it (in log space) each side, or by a factor of 1.05 for a single value. uPlot's
 * rangeLog snaps to whole decades: lines within one (a loss from 1.05 to 1.15) were drawn flat
 * along the bottom of a 1–10 axis. */
export function logLimits(lo: number, hi: number): [number, number] {
  const a = Math.log10(lo);
  const b = Math.log10(hi);
  const pad = b > a ? 0.05 * (b - a) : Math.log10(1.05);
  return [10 ** (a - pad), 10 ** (b + pad)];
}

/** Ticks of a log axis from `min` to `max` (> 0, any range: not snapped to decades) for an axis
 * `room` px high. Over a decade or more: 1, 2 and 5 times powers of ten (or 1 and 3 times, or
 * powers alone, or every second or third power, as room allows; 1 to 9 times when there is room
 * for them all);
 * within a decade, where few or none of those fall: evenly spaced round values, as on a linear
 * axis (the lines' spread there is nearly linear). */
export function logSplits(min: number, max: number, room: number): number[] {
  if (!(min > 0) || !(max > min) || !Number.isFinite(max)) return [];
  const most = Math.max(2, Math.floor(room / TICK_ROOM));
  const first = Math.floor(Math.log10(min));
  const last = Math.ceil(Math.log10(max));
  const within = (vs: number[]): number[] => vs.filter((v) => v >= min * (1 - 1e-12) && v <= max * (1 + 1e-12));
  const decades = (mantissas: readonly number[], every = 1): number[] => {
    const out: number[] = [];
    for (let e = first; e <= last; e++) {
      if (e % every !== 0) continue;
      // 10 ** e with a negative e is inexact (10 ** -3 = 0.0010000000000000002): divide instead.
      const power = e >= 0 ? 10 ** e : 1 / 10 ** -e;
      for (const m of mantissas) out.push(Number((m * power).toPrecision(12)));
    }
    return within(out);
  };
  for (const mantissas of [[1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 5], [1, 3], [1]]) {
    const ticks = decades(mantissas);
    if (ticks.length >= 3 && ticks.length <= most) return ticks;
  }
  const powers = decades([1]);
  if (powers.length > most) {
    for (let every = 2; ; every++) {
      const ticks = decades([1], every);
      if (ticks.length <= most) return ticks;
    }
  }
  // Two powers of ten in range: a decade or more, which linear ticks would crowd at its top.
  if (powers.length === 2) return powers;
  // Fewer than 3 round log ticks: linear ones, a round step (1, 2 or 5 times a power of ten).
  const raw = (max - min) / Math.min(most, 6);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const out: number[] = [];
  for (let k = Math.ceil(min / step); k * step <= max * (1 + 1e-12); k++) out.push(Number((k * step).toPrecision(12)));
  return out;
}

/** Tick increments that are whole numbers, ascending (1, 2, 5, 10, 20, 25, 50, 100, …, up to
 * 5e18): a step axis has no tick between two steps (a chart of a few steps had 0.5, 1.5). */
export const WHOLE_INCRS: readonly number[] = (() => {
  const out: number[] = [];
  for (let e = 0; e <= 18; e++) {
    const p = 10 ** e;
    out.push(p, 2 * p);
    if (e > 0) out.push(2.5 * p);
    out.push(5 * p);
  }
  return out;
})();

/** A numeric x axis (a time axis keeps uPlot's own labels); `whole`: ticks on whole numbers
 * only (steps). */
export function numericX(label?: string, whole = false): uPlot.Axis {
  return whole ? { label, values: axisValues, incrs: [...WHOLE_INCRS] } : { label, values: axisValues };
}
