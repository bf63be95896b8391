// A chart's lines in canvas pixels, without a DOM (unit-tested): a scale's value → pixel
// arithmetic as uPlot computes it, a line's points projected into reused typed arrays, and the
// two hairlines that draw a line 1.5 device pixels wide (scalars_card.ts draws them).

/** The parts of a uPlot scale the projection reads. */
export interface ScaleLike {
  min?: number | null;
  max?: number | null;
  distr?: number;
  dir?: number;
  ori?: number;
  log?: number;
}

/** The plot's box in canvas pixels (uPlot's bbox). */
export interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** pixel = offset + v × factor (v: the value, or its log10 on a log scale). */
export interface LinearProjection {
  log: boolean;
  offset: number;
  factor: number;
}

/** A value → canvas pixel: arithmetic, or (any other scale) a function (uPlot's valToPos). */
export type Projection = LinearProjection | ((v: number) => number);

/** A scale's value → canvas pixel as uPlot's valToPos(v, key, true) computes it (left + width
 * × pct horizontally, top + height × (1 − pct) vertically, pct the value's fraction of the
 * scale's range), for linear and log-10 scales in the usual direction; null for any other
 * (or a scale without a range). */
export function linearProjection(scale: ScaleLike, box: Box): LinearProjection | null {
  const { min, max } = scale;
  if (min == null || max == null || (scale.dir ?? 1) !== 1) return null;
  const distr = scale.distr ?? 1;
  const log = distr === 3;
  if (!(distr === 1 || (log && (scale.log ?? 10) === 10 && min > 0 && max > 0))) return null;
  const lo = log ? Math.log10(min) : min;
  const span = (log ? Math.log10(max) : max) - lo;
  const { left, top, width, height } = box;
  if (scale.ori === 0) return { log, offset: left - (lo * width) / span, factor: width / span };
  if (scale.ori === 1) return { log, offset: top + height + (lo * height) / span, factor: -height / span };
  return null;
}

/** A line's points in canvas pixels, in arrays reused from line to line. */
export class LinePoints {
  x = new Float64Array(1024);
  y = new Float64Array(1024);

  /** Projects the points of xs/ys in [from, to) whose y is not null (a gap is spanned);
   * returns how many (the first n of x and y). */
  fill(xs: readonly number[], ys: readonly (number | null | undefined)[], from: number, to: number, toX: Projection, toY: Projection): number {
    if (this.x.length < to - from) {
      this.x = new Float64Array(2 * (to - from));
      this.y = new Float64Array(2 * (to - from));
    }
    const { x: outX, y: outY } = this;
    let n = 0;
    if (typeof toX !== "function" && typeof toY !== "function" && !toX.log) {
      // The usual case, straight arithmetic: a linear x scale, a linear or log y scale.
      const { offset: ox, factor: fx } = toX;
      const { offset: oy, factor: fy, log } = toY;
      for (let i = from; i < to; i++) {
        const y = ys[i];
        if (y === null || y === undefined) continue;
        outX[n] = ox + xs[i] * fx;
        outY[n] = oy + (log ? Math.log10(y) : y) * fy;
        n++;
      }
      return n;
    }
    const px = typeof toX === "function" ? toX : (v: number): number => toX.offset + (toX.log ? Math.log10(v) : v) * toX.factor;
    const py = typeof toY === "function" ? toY : (v: number): number => toY.offset + (toY.log ? Math.log10(v) : v) * toY.factor;
    for (let i = from; i < to; i++) {
      const y = ys[i];
      if (y === null || y === undefined) continue;
      outX[n] = px(xs[i]);
      outY[n] = py(y);
      n++;
    }
    return n;
  }
}

/** What a path is given (Path2D, or a test's recorder). */
export interface PathSink {
  moveTo(x: number, y: number): void;
  lineTo(x: number, y: number): void;
}

/** Half the distance between the two hairlines that draw a line 1.5 device pixels wide. */
export const HAIRLINE_SPREAD = 0.35;

/** The two one-pixel lines that draw the line through the first n points of x/y 1.5 device
 * pixels wide: each HAIRLINE_SPREAD px to one side of it, along the normal at each point (of
 * the chord between its neighbours; of its segment at an end), on pixel centres (+0.5, as
 * uPlot aligns a one-pixel line).
 *
 * Why: the canvas (Skia) draws a line at most one device pixel wide as a hairline, and a
 * wider one through its general stroker and path filler, several times as long: the first
 * paint of the standard workload (5 charts of 16 runs' ~500 points) spent about 100 ms of the
 * page's main thread rasterising its lines, about 25 ms so (headless Chromium, software
 * raster). Compared on screenshots with the 1.5-pixel stroke, the charts differ by about
 * 1/255 a pixel on average: the same look. */
export function hairlinePair(x: Float64Array, y: Float64Array, n: number, left: PathSink, right: PathSink): void {
  for (let i = 0; i < n; i++) {
    const p = i > 0 ? i - 1 : 0;
    const q = i < n - 1 ? i + 1 : n - 1;
    const dx = x[q] - x[p];
    const dy = y[q] - y[p];
    const scale = HAIRLINE_SPREAD / (Math.sqrt(dx * dx + dy * dy) || 1);
    const nx = -dy * scale;
    const ny = dx * scale;
    const cx = x[i] + 0.5;
    const cy = y[i] + 0.5;
    if (i === 0) {
      left.moveTo(cx + nx, cy + ny);
      right.moveTo(cx - nx, cy - ny);
    } else {
      left.lineTo(cx + nx, cy + ny);
      right.lineTo(cx - nx, cy - ny);
    }
  }
}
