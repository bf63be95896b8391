// Numeric axes of the dashboard's uPlot charts: short tick labels (./ticks), and a y axis as
// wide as its longest label. uPlot's y axis is 50 px whatever it holds, so "-1,000,000,000" or
// "1.0e-6" lost their first characters under the card's edge.

import uPlot from "uplot";

import { tickLabels } from "./ticks";

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

/** A numeric y axis. */
export function numericY(): uPlot.Axis {
  return { values: axisValues, size: axisSize };
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
