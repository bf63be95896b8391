// One scalar chart card: a uPlot chart of a tag's runs, with zoom and pan, a hover tooltip,
// a y scale switch (by the view) and CSV/JSON downloads.
//
// The card's model (what it draws, scalars_model.ts) is computed whenever its data or the
// view change, in view or not, and published as data attributes (the contract tests read,
// issue 14 §4); the chart itself is drawn only while the card is in view.
//
// Zoom: drag across the chart to zoom into an x range; Ctrl/Alt + wheel zooms around the
// pointer, Shift + wheel and Shift + drag pan; double-click zooms out. A new window asks the
// view (onRange) to fetch the window's points at the chart's resolution.

import uPlot from "uplot";

import { scalarsUrl } from "../api";
import { runColor } from "../colors";
import { el } from "../dom";
import {
  type CardModel,
  type DrawOptions,
  formatValue,
  lowerBound,
  prepareCard,
  type TooltipRow,
  tooltipRows,
  upperBound,
  valuesAt,
  type XRange,
  xExtent,
  yExtent,
} from "./scalars_model";
import type { Series } from "../series";
import { hairlinePair, LinePoints, linearProjection, type Projection } from "./lines";
import { logLimits, numericX, numericY } from "./axes";
import { describeInto } from "./common";

/** The points of the line drawn, in canvas pixels (one set of arrays for every chart). */
const linePoints = new LinePoints();

const CHART_HEIGHT = 220;

/** One line of the chart: its run's kept x values, its y values (null: not drawn), its
 * colour and width (CSS pixels); a run of one point is a dot (as uPlot draws a point). */
interface Line {
  xs: readonly number[];
  ys: readonly (number | null)[];
  stroke: string;
  width: number;
  dot: boolean;
}
/** A run of one point, in canvas pixels. */
interface Dot {
  x: number;
  y: number;
  stroke: string;
}
/** A dot as uPlot draws a series' point: 6 CSS pixels across, its outline 1.2 wide. */
const DOT_SIZE = 6;
const DOT_WIDTH = 1.2;
/** A wheel notch zooms by this factor (in) or its inverse (out). */
const WHEEL_ZOOM = 0.8;

export class ScalarCard {
  readonly root: HTMLElement;
  private readonly plotBox: HTMLElement;
  private readonly tooltip: HTMLElement;
  /** The hover markers (showMarkers), made as needed and reused. */
  private readonly markers: HTMLElement[] = [];
  private readonly csv: HTMLAnchorElement;
  private readonly json: HTMLAnchorElement;
  private plot: uPlot | null = null;
  /** The chart's lines, drawn by drawLines. */
  private lines: Line[] = [];
  private shape = "";
  private model: CardModel | null = null;
  private options: DrawOptions | null = null;
  /** The x window the user zoomed into (null: everything). */
  range: XRange = null;
  private width = 400;
  visible = false;
  /** The data or the view changed since the model was computed. */
  dirty = true;
  /** The model changed since the chart was drawn. */
  stale = true;
  loaded = false;
  /** Called when the user moves the x window (null: zoomed out). */
  onRange: (range: XRange) => void = () => {};
  /** Called when the user makes the chart span the page's width, or not. */
  onWide: (wide: boolean) => void = () => {};
  private readonly wideButton = el("button", { type: "button", class: "wide-toggle", "aria-pressed": "false", title: "span the page's width" }, "⤢");

  /** The tag's summary description, when it has one (see describeInto). */
  private readonly description = el("div", { class: "description", hidden: "" });
  private written = "";

  constructor(readonly tag: string) {
    this.plotBox = el("div", { class: "plot" });
    this.tooltip = el("div", { class: "tooltip", hidden: "" });
    const safe = tag.replace(/[^\w.-]+/g, "_");
    this.csv = el("a", { class: "download", "data-format": "csv", download: `${safe}.csv`, title: "every point of the runs shown, as CSV" }, "CSV");
    this.json = el("a", { class: "download", "data-format": "json", download: `${safe}.json`, title: "every point of the runs shown, as JSON" }, "JSON");
    this.root = el(
      "section",
      { class: "card", "data-tag": tag, "data-points": "0", "data-zoom": "" },
      el("div", { class: "card-head" }, el("h3", { title: tag }, tag), el("span", { class: "downloads" }, this.csv, this.json), this.wideButton),
      this.description,
      this.plotBox,
      this.tooltip,
    );
    for (const link of [this.csv, this.json]) link.addEventListener("click", (e) => this.download(e, link));
    this.wideButton.addEventListener("click", () => this.onWide(!this.wide));
    this.plotBox.title = "drag: zoom · Ctrl/Alt+wheel: zoom · Shift+drag or Shift+wheel: pan · double-click: zoom out";
    this.plotBox.addEventListener("dblclick", () => this.setRange(null));
    this.plotBox.addEventListener("wheel", (e) => this.onWheel(e), { passive: false });
    // Capture: Shift+drag pans, and uPlot (listening below) must not start a selection then.
    this.plotBox.addEventListener("mousedown", (e) => this.onPanStart(e), { capture: true });
    this.plotBox.addEventListener("mouseleave", () => {
      this.tooltip.hidden = true;
      for (const marker of this.markers) marker.hidden = true;
    });
  }

  /** Whether the chart spans the page's width (a row of its group to itself). */
  get wide(): boolean {
    return this.root.classList.contains("wide");
  }

  set wide(on: boolean) {
    this.root.classList.toggle("wide", on);
    this.wideButton.setAttribute("aria-pressed", String(on));
    this.wideButton.title = on ? "back to the grid" : "span the page's width";
  }

  /** Shows the tag's description under its title (the first run's that has one), as written
   * until rendered() gives its Markdown rendered. */
  describe(text: string): void {
    if (!text || !this.description.hidden) return;
    this.written = text;
    describeInto(this.description, text);
    this.description.hidden = false;
  }

  /** The description's Markdown rendered (sanitized HTML from the server). */
  rendered(html: string): void {
    if (!html) return;
    describeInto(this.description, this.written, html);
    this.description.hidden = false;
  }

  /** Reads the chart's width (a layout read: done for every card before any is drawn). */
  measure(): void {
    const width = this.plotBox.clientWidth;
    if (width > 0) this.width = width;
  }

  /** Computes what the card draws and publishes it (data attributes), in view or not. */
  prepare(series: Map<string, Series>, runs: string[], view: Omit<DrawOptions, "width" | "range">): void {
    this.dirty = false;
    const options: DrawOptions = { ...view, width: this.width, range: this.range };
    const model = prepareCard(series, runs, options);
    this.model = model;
    this.options = options;
    this.stale = true;
    const d = this.root.dataset;
    d.points = String(model.points);
    if (model.lastStep === null) delete d.lastStep;
    else d.lastStep = String(model.lastStep);
    d.runs = JSON.stringify(model.drawn);
    d.smoothing = String(view.smoothing);
    d.lastValue = JSON.stringify(model.lastValue);
    d.nonFinite = String(
      model.traces.reduce((n, t) => n + t.nonFinite.nan.length + t.nonFinite.inf.length + t.nonFinite.negInf.length, 0),
    );
    d.yScale = view.logY ? "log" : "linear";
    d.ignoreOutliers = String(view.ignoreOutliers);
    d.zoom = this.range ? `${this.range[0]},${this.range[1]}` : "";
    this.csv.href = scalarsUrl(this.tag, model.drawn, "csv");
    this.json.href = scalarsUrl(this.tag, model.drawn, "json");
  }

  /** Draws the prepared model on the chart. uPlot holds the axes, the scales, the cursor and
   * the selection, and draws no line: its data is the x extent alone (two x values, no y
   * series), its y range is the lines' own within the x window (yExtent, with uPlot's
   * padding), and the lines are drawn by drawLines from each run's own points. uPlot's
   * aligned data (the union of every run's x values, each run's values spread over it) cost
   * more than any other part of a first paint's drawing: 16 runs' extremes have about 7
   * times as many x values together as one has. */
  render(): void {
    const model = this.model;
    const options = this.options;
    if (!model || !options) return;
    this.stale = false;
    const lines: Line[] = [];
    for (const t of model.traces) {
      const color = runColor(t.run);
      // A line needs two points: a series of one is drawn as a dot.
      const dot = t.xs.length === 1;
      if (t.smoothed) {
        lines.push({ xs: t.xs, ys: t.raw, stroke: color + "40", width: 1, dot: false });
        lines.push({ xs: t.xs, ys: t.smoothed, stroke: color, width: 1.5, dot });
      } else {
        lines.push({ xs: t.xs, ys: t.raw, stroke: color, width: 1.5, dot });
      }
    }
    this.lines = lines;
    const extent = xExtent(model);
    // One step (a final metric: PyTorch's add_hparams writes them at step 0) is centred in
    // a range of ±1 (uPlot's own range of one value, 0..100 for 0, put it on the y axis).
    const xs = extent === null ? [] : extent[0] === extent[1] ? [extent[0] - 1, extent[0] + 1] : extent;
    const data: uPlot.AlignedData = [xs];
    const shape = [options.x, options.logY].join("|");
    if (this.plot === null || shape !== this.shape) {
      this.plot?.destroy();
      this.shape = shape;
      this.plot = new uPlot(this.chartOptions(options), data, this.plotBox);
      if (this.range) this.applyRange(this.range);
    } else {
      // The card's width follows its grid column (a window resize): the chart follows it.
      if (this.plot.width !== options.width) this.plot.setSize({ width: options.width, height: CHART_HEIGHT });
      this.plot.setData(data, this.range === null);
      if (this.range) this.applyRange(this.range);
      // A tooltip on show reads the new points.
      if (!this.tooltip.hidden) this.showTooltip(this.plot);
    }
  }

  /** The y scale's range: the lines' extent in the x window (and where they cross its
   * edges), padded as uPlot pads its auto range (rangeNum), or on a log scale by logLimits.
   * Without any (a series of NaN and ±inf only, a window holding no line): 0..1 (1..10 on a
   * log scale), so the axis is drawn and so are the marks of the points that are not numbers. */
  private yRange(logY: boolean): uPlot.Range.MinMax {
    const extent = this.model ? yExtent(this.model, this.range, logY, this.options?.ignoreOutliers ?? false) : null;
    if (extent === null) return logY ? [1, 10] : [0, 1];
    return logY ? logLimits(extent[0], extent[1]) : uPlot.rangeNum(extent[0], extent[1], 0.1, true);
  }

  /** Draws every series' line from its own points (uPlot's own line would walk every x of
   * the chart, the union of all runs' steps: 16 runs' extremes have about 7 times as many as
   * one run), those in the x window and one neighbour each side; gaps (null) are spanned. As
   * uPlot draws a line (its pixel alignment, round joins, butt caps, clipped to the plot), in
   * the series' order, but in one pass: one clip for the chart, and positions computed from
   * the scales directly rather than through valToPos per point (lines.ts). A line 1.5 device
   * pixels wide (the smoothed lines at a pixel ratio of 1) is drawn as two lines of one pixel
   * (lines.ts, hairlinePair). */
  private drawLines(u: uPlot): void {
    const x = u.scales.x;
    const y = u.scales.y;
    if (x.min == null || x.max == null || y.min == null || y.max == null || this.lines.length === 0) return;
    const toX: Projection = linearProjection(x, u.bbox) ?? ((v) => u.valToPos(v, "x", true));
    const toY: Projection = linearProjection(y, u.bbox) ?? ((v) => u.valToPos(v, "y", true));
    const { left, top, width, height } = u.bbox;
    const ctx = u.ctx;
    ctx.save();
    ctx.beginPath();
    ctx.rect(Math.floor(left), Math.floor(top), Math.ceil(width) + 1, Math.ceil(height) + 1);
    ctx.clip();
    ctx.lineJoin = "round";
    ctx.lineCap = "butt";
    ctx.setLineDash([]);
    const ratio = uPlot.pxRatio;
    const at = linePoints;
    const dots: Dot[] = [];
    for (const line of this.lines) {
      const { xs, ys } = line;
      const from = Math.max(0, lowerBound(xs, x.min) - 1);
      const to = Math.min(xs.length, upperBound(xs, x.max) + 1);
      const n = at.fill(xs, ys, from, to, toX, toY);
      if (line.dot) {
        if (n > 0) dots.push({ x: at.x[0], y: at.y[0], stroke: line.stroke });
        continue;
      }
      if (n < 2) continue;
      ctx.strokeStyle = line.stroke;
      const lineWidth = Math.round(line.width * ratio * 1000) / 1000;
      if (lineWidth === 1.5) {
        // Two hairlines (lines.ts, hairlinePair): the same look, a fraction of the raster time.
        const one = new Path2D();
        const other = new Path2D();
        hairlinePair(at.x, at.y, n, one, other);
        ctx.lineWidth = 1;
        ctx.stroke(one);
        ctx.stroke(other);
        continue;
      }
      // uPlot's pixel alignment: an odd width's line on pixel centres.
      const offset = (lineWidth % 2) / 2;
      const stroke = new Path2D();
      stroke.moveTo(at.x[0] + offset, at.y[0] + offset);
      for (let i = 1; i < n; i++) stroke.lineTo(at.x[i] + offset, at.y[i] + offset);
      ctx.lineWidth = lineWidth;
      ctx.stroke(stroke);
    }
    ctx.restore();
    if (dots.length > 0) this.drawDots(ctx, dots, u.bbox, ratio);
    this.drawNonFinite(u);
    // The y axis drawn, for tests (the canvas is pixels): its range (a log axis's ticks are
    // noted as the axis makes them).
    const scale = u.scales.y;
    this.root.dataset.yRange = `${scale.min},${scale.max}`;
  }

  /** Marks each run's points that are not numbers (the line has a gap there), in the run's
   * colour: NaN as a hollow triangle and +inf as a filled one pointing up at the top edge,
   * -inf as a filled one pointing down at the bottom edge; at most one of a kind a pixel. */
  private drawNonFinite(u: uPlot): void {
    const model = this.model;
    const x = u.scales.x;
    if (!model || x.min == null || x.max == null) return;
    const { left, top, width, height } = u.bbox;
    const size = 7 * uPlot.pxRatio;
    const ctx = u.ctx;
    let drawn = 0;
    ctx.save();
    ctx.lineWidth = uPlot.pxRatio;
    for (const t of model.traces) {
      const color = runColor(t.run);
      const kinds: [number[], number, boolean][] = [
        [t.nonFinite.nan, top + size, false],
        [t.nonFinite.inf, top + size, true],
        [t.nonFinite.negInf, top + height - size, true],
      ];
      for (const [xs, y, filled] of kinds) {
        let last = Number.NaN;
        const down = y > top + height / 2;
        for (const v of xs) {
          if (v < x.min || v > x.max) continue;
          const px = Math.round(u.valToPos(v, "x", true));
          if (px === last || px < left || px > left + width) continue;
          last = px;
          ctx.beginPath();
          ctx.moveTo(px, down ? y + size / 2 : y - size / 2);
          ctx.lineTo(px - size / 2, down ? y - size / 2 : y + size / 2);
          ctx.lineTo(px + size / 2, down ? y - size / 2 : y + size / 2);
          ctx.closePath();
          if (filled) {
            ctx.fillStyle = color;
            ctx.fill();
          } else {
            ctx.strokeStyle = color;
            ctx.stroke();
          }
          drawn++;
        }
      }
    }
    ctx.restore();
    // What the last drawing marked (tests read it; the canvas is pixels).
    this.root.dataset.nonFiniteDrawn = String(drawn);
  }

  /** Draws runs of one point as uPlot draws a series' points: on whole pixels (shifted by
   * half the outline's odd part), white inside, clipped to the plot grown by a dot. */
  private drawDots(ctx: CanvasRenderingContext2D, dots: readonly Dot[], bbox: uPlot.BBox, ratio: number): void {
    const outline = Math.round(DOT_WIDTH * ratio * 1000) / 1000;
    const shift = (outline % 2) / 2;
    const radius = ((DOT_SIZE - DOT_WIDTH) / 2) * ratio;
    ctx.save();
    ctx.beginPath();
    ctx.rect(bbox.left - 2 * radius, bbox.top - 2 * radius, bbox.width + 4 * radius, bbox.height + 4 * radius);
    ctx.clip();
    ctx.lineWidth = outline;
    ctx.fillStyle = "#fff";
    for (const d of dots) {
      const path = new Path2D();
      path.arc(Math.round(d.x) + shift, Math.round(d.y) + shift, radius, 0, 2 * Math.PI);
      ctx.strokeStyle = d.stroke;
      ctx.fill(path);
      ctx.stroke(path);
    }
    ctx.restore();
  }

  private chartOptions(options: DrawOptions): uPlot.Options {
    const logY = options.logY;
    return {
      width: options.width,
      height: CHART_HEIGHT,
      legend: { show: false },
      scales: {
        x: { time: options.x === "wall" },
        y: { distr: logY ? 3 : 1, range: () => this.yRange(logY) },
      },
      axes: [
        options.x === "wall" ? {} : options.x === "relative" ? numericX("relative (s)") : numericX(undefined, true),
        logY
          ? numericY(true, (ticks, labels) => {
              this.root.dataset.yTicks = JSON.stringify(ticks);
              this.root.dataset.yTickLabels = JSON.stringify(labels);
            })
          : numericY(),
      ],
      series: [{}],
      cursor: {
        drag: { x: true, y: false, setScale: false },
        // Double-click is the card's (zoom out, and forget the window).
        bind: { dblclick: () => () => null },
      },
      hooks: {
        // A drag selects an x range: the card zooms into it itself (every x scale change is
        // the card's, none is uPlot's own, so none is mistaken for the user's).
        setSelect: [
          (u) => {
            const { left, width } = u.select;
            if (width <= 0) return;
            const range: [number, number] = [u.posToVal(left, "x"), u.posToVal(left + width, "x")];
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            this.setRange(range);
          },
        ],
        setCursor: [(u) => this.showTooltip(u)],
        draw: [(u) => this.drawLines(u)],
      },
    };
  }

  private applyRange(range: readonly [number, number]): void {
    this.plot?.setScale("x", { min: range[0], max: range[1] });
  }

  /** Sets the x window (null: everything) as the user's, and tells the view. */
  setRange(range: XRange): void {
    this.range = range;
    this.onRange(range);
  }

  private currentRange(): [number, number] | null {
    const x = this.plot?.scales.x;
    if (!x || x.min == null || x.max == null) return null;
    return [x.min, x.max];
  }

  private onWheel(e: WheelEvent): void {
    const u = this.plot;
    const range = this.currentRange();
    if (!u || !range) return;
    const [lo, hi] = range;
    const span = hi - lo;
    if (e.shiftKey) {
      e.preventDefault();
      const delta = (e.deltaY || e.deltaX) > 0 ? span * 0.1 : -span * 0.1;
      this.setRange([lo + delta, hi + delta]);
    } else if (e.ctrlKey || e.altKey || e.metaKey) {
      e.preventDefault();
      const rect = u.over.getBoundingClientRect();
      const at = u.posToVal(e.clientX - rect.left, "x");
      const factor = e.deltaY < 0 ? WHEEL_ZOOM : 1 / WHEEL_ZOOM;
      this.setRange([at - (at - lo) * factor, at + (hi - at) * factor]);
    }
  }

  private onPanStart(e: MouseEvent): void {
    const u = this.plot;
    const range = this.currentRange();
    if (!e.shiftKey || e.button !== 0 || !u || !range) return;
    e.preventDefault();
    e.stopPropagation();
    const startX = e.clientX;
    const perPixel = (range[1] - range[0]) / Math.max(1, u.over.clientWidth);
    const move = (m: MouseEvent): void => {
      const shift = (startX - m.clientX) * perPixel;
      this.range = [range[0] + shift, range[1] + shift];
      this.applyRange(this.range);
    };
    const up = (m: MouseEvent): void => {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      const shift = (startX - m.clientX) * perPixel;
      this.setRange([range[0] + shift, range[1] + shift]);
    };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  }

  private showTooltip(u: uPlot): void {
    const left = u.cursor.left;
    const model = this.model;
    if (!model || left === undefined || left < 0 || model.traces.length === 0) {
      this.tooltip.hidden = true;
      this.showMarkers(u, []);
      return;
    }
    const x = u.posToVal(left, "x");
    const all = valuesAt(model, x);
    // Many runs: those nearest the pointer, the count of the others under them.
    const { shown: rows, more } = tooltipRows(all, u.cursor.top === undefined ? NaN : u.posToVal(u.cursor.top, "y"));
    const wall = this.options?.x === "wall";
    // On a step axis the head names a step, not the pointer's position between two (the rows'
    // step when they share one, else the nearest whole step).
    const steps = new Set(rows.map((r) => r.step));
    const step = steps.size === 1 ? [...steps][0] : Math.round(x);
    const head = el(
      "div",
      { class: "tooltip-head" },
      wall ? new Date(x * 1000).toLocaleString() : this.options?.x === "relative" ? `t ${formatValue(x)}` : `step ${step}`,
    );
    const table = el("table", {});
    for (const r of rows) {
      const swatch = el("span", { class: "swatch" });
      swatch.style.background = runColor(r.run);
      table.append(
        el(
          "tr",
          { "data-run": r.run, "data-step": String(r.step), "data-value": String(r.value) },
          el("td", {}, swatch, r.run),
          el("td", { class: "num" }, r.smoothed === null ? formatValue(r.value) : formatValue(r.smoothed)),
          el("td", { class: "num faint" }, r.smoothed === null ? "" : formatValue(r.value)),
          el("td", { class: "num faint" }, `step ${r.step}`),
        ),
      );
    }
    const rest = more ? [el("div", { class: "tooltip-more faint" }, `+${more} more run${more > 1 ? "s" : ""} (the ${rows.length} nearest the pointer shown)`)] : [];
    this.tooltip.replaceChildren(head, table, ...rest);
    this.tooltip.hidden = false;
    this.showMarkers(u, rows);
    const box = this.root.getBoundingClientRect();
    const over = u.over.getBoundingClientRect();
    const px = over.left - box.left + left;
    // Beside the pointer, on the side with room.
    const flip = px > box.width / 2;
    this.tooltip.style.left = flip ? "" : `${px + 16}px`;
    this.tooltip.style.right = flip ? `${box.width - px + 16}px` : "";
    this.tooltip.style.top = `${over.top - box.top + 8}px`;
  }

  /** Marks each run's point that the tooltip lists (on its line: smoothed when smoothing
   * is on), in the run's colour, over the chart (uPlot's own hover points would mark only
   * the runs that have a point at the very x under the pointer). */
  private showMarkers(u: uPlot, rows: readonly TooltipRow[]): void {
    const logY = this.options?.logY ?? false;
    let shown = 0;
    for (const r of rows) {
      const y = r.smoothed ?? r.value;
      if (!Number.isFinite(y) || (logY && y <= 0)) continue;
      const left = u.valToPos(r.x, "x");
      const top = u.valToPos(y, "y");
      // Outside the plot (or no scale yet): not marked.
      if (!(left >= 0 && left <= u.over.clientWidth && top >= 0 && top <= u.over.clientHeight)) continue;
      let marker = this.markers[shown];
      if (!marker) {
        marker = el("div", { class: "hover-point" });
        this.markers.push(marker);
      }
      if (marker.parentElement !== u.over) u.over.append(marker);
      marker.style.transform = `translate(${left}px, ${top}px)`;
      marker.style.borderColor = runColor(r.run);
      marker.hidden = false;
      shown++;
    }
    for (let i = shown; i < this.markers.length; i++) this.markers[i].hidden = true;
  }

  /** Saves the link's answer under the card's name (the API's own names the experiment). */
  private download(e: MouseEvent, link: HTMLAnchorElement): void {
    e.preventDefault();
    const name = link.getAttribute("download") ?? "scalars";
    fetch(link.href, { credentials: "same-origin" })
      .then((response) => {
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        return response.blob();
      })
      .then((blob) => {
        const url = URL.createObjectURL(blob);
        const save = el("a", { href: url, download: name });
        save.click();
        setTimeout(() => URL.revokeObjectURL(url), 60_000);
      })
      .catch((err) => console.warn(`downloading ${name} failed`, err));
  }

  destroy(): void {
    this.plot?.destroy();
    this.plot = null;
  }
}
