// Histograms: a card per (tag, run) in TensorBoard's offset view: one ridge per step, the
// oldest at the back (top, light), the newest in front (bottom, in the run's colour), all on
// one value axis. Drawn on a canvas; a committed step is fetched and added by itself.
//
// Contract for tests: each card carries data-tag, data-run, data-steps (histograms drawn)
// and data-last-step (the largest step drawn).

import type { Schemas } from "../api_types";
import { runColor } from "../colors";
import { api, CardsView, el, seriesCard, type ViewDef } from "./common";
import { asBuckets, type Bucket, niceTicks, rebin, valueRange } from "./histmath";
import { tickLabels } from "./ticks";

/** Histograms per series drawn (TensorBoard's route gives 51). */
const STEPS_SHOWN = 50;
const BINS = 60;
const WIDTH = 440;
const HEIGHT = 260;
const LABEL_FONT = "11px system-ui, sans-serif";

/** A step's histogram: its point of /api/v1/tensors with the tensor's values read as
 * buckets (asBuckets). */
type Hist = Pick<Schemas["TensorDatum"], "step" | "wall_time"> & { values: Bucket[] };

/** The histograms of a series' points; a point whose tensor is not [k, 3] buckets is left
 * out (said once per answer). */
function histogramsOf(points: readonly Schemas["TensorDatum"][], what: string): Hist[] {
  const out: Hist[] = [];
  let skipped = 0;
  for (const p of points) {
    const values = asBuckets(p.values);
    if (values) out.push({ step: p.step, wall_time: p.wall_time, values });
    else skipped++;
  }
  if (skipped) console.warn(`${what}: ${skipped} step(s) whose tensor is not a histogram, not drawn`);
  return out;
}

class HistogramCard {
  readonly root: HTMLElement;
  // Its final height from the start: a card that grows when drawn would push the cards
  // below it out of view while they load.
  private readonly canvas = el("canvas", { class: "ridges", height: String(HEIGHT), style: `height: ${HEIGHT}px; width: 100%` });
  private readonly readout = el("span", { class: "readout" });
  /** Where the last drawing put things, for the hover readout. */
  private geometry: { lo: number; hi: number; left: number; right: number; baselines: number[]; bins: Float64Array[] } | null = null;
  hists: Hist[] = [];
  dirty = true;
  visible = false;
  stale = true;

  constructor(
    readonly tag: string,
    readonly run: string,
  ) {
    this.root = seriesCard("hist-card", tag, run, [this.readout], this.canvas);
    this.canvas.addEventListener("mousemove", (e) => this.hover(e.offsetX, e.offsetY));
    this.canvas.addEventListener("mouseleave", () => {
      this.readout.textContent = "";
    });
  }

  /** The step whose ridge is under the pointer (the nearest baseline at or below it), the
   * value there and the count of its bin. */
  private hover(x: number, y: number): void {
    const g = this.geometry;
    if (!g || !this.hists.length || x < g.left || x > g.right) {
      this.readout.textContent = "";
      return;
    }
    let k = g.baselines.findIndex((b) => b >= y);
    if (k < 0) k = g.baselines.length - 1;
    const bins = g.bins[k];
    const bin = Math.min(bins.length - 1, Math.max(0, Math.floor(((x - g.left) / (g.right - g.left)) * bins.length)));
    const value = g.lo + ((bin + 0.5) / bins.length) * (g.hi - g.lo);
    this.readout.textContent = `step ${this.hists[k].step} · ${tick(value)} · count ${tick(bins[bin])}`;
  }

  draw(): void {
    const hists = this.hists;
    this.root.dataset.steps = String(hists.length);
    if (hists.length) this.root.dataset.lastStep = String(hists[hists.length - 1].step);
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(240, this.canvas.parentElement?.clientWidth ? this.canvas.parentElement.clientWidth - 12 : WIDTH);
    this.canvas.width = Math.round(width * ratio);
    this.canvas.height = Math.round(HEIGHT * ratio);
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${HEIGHT}px`;
    const g = this.canvas.getContext("2d");
    if (!g) return;
    g.scale(ratio, ratio);
    g.clearRect(0, 0, width, HEIGHT);
    const range = valueRange(hists.map((h) => h.values));
    if (!range) {
      // Steps whose values are NaN or ±inf only (a diverged run) have no value axis: said,
      // rather than "no histogram yet" for a series that has histograms.
      const message = hists.length ? `${hists.length} step${hists.length > 1 ? "s" : ""}, no finite value (NaN, ±inf or empty)` : "no histogram yet";
      this.root.dataset.message = message;
      g.fillStyle = "#888";
      g.font = "12px system-ui, sans-serif";
      g.fillText(message, 12, 24);
      return;
    }
    delete this.root.dataset.message;
    const [lo, hi] = range;
    const rebinned = hists.map((h) => rebin(h.values, lo, hi, BINS));
    let peak = 0;
    for (const bins of rebinned) for (const c of bins) peak = Math.max(peak, c);
    const firstStep = hists[0].step;
    const lastStep = hists[hists.length - 1].step;
    // The step axis (right) labels the first, middle and last ridges; the plot leaves room
    // for the widest label (steps run to millions and beyond).
    const labelled = new Set([firstStep, lastStep]);
    if (hists.length > 2) labelled.add(hists[Math.floor(hists.length / 2)].step);
    g.font = LABEL_FONT;
    let labelWidth = 0;
    for (const step of labelled) labelWidth = Math.max(labelWidth, g.measureText(`step ${step}`).width);
    const left = 8;
    const right = width - Math.ceil(labelWidth) - 8;
    const top = 8;
    const bottom = HEIGHT - 24;
    // Each ridge's baseline is its step's place on the step axis; a ridge rises up to a third
    // of the plot above it.
    const ridge = (bottom - top) / 3;
    const baseline = (step: number): number =>
      lastStep === firstStep ? bottom : top + ridge + ((step - firstStep) / (lastStep - firstStep)) * (bottom - top - ridge);
    const x = (i: number): number => left + ((i + 0.5) / BINS) * (right - left);
    this.geometry = { lo, hi, left, right, baselines: hists.map((h) => baseline(h.step)), bins: rebinned };
    const color = runColor(this.run);
    hists.forEach((h, k) => {
      const bins = rebinned[k];
      const y0 = baseline(h.step);
      const age = hists.length === 1 ? 1 : k / (hists.length - 1);
      g.beginPath();
      g.moveTo(left, y0);
      for (let i = 0; i < BINS; i++) g.lineTo(x(i), y0 - (peak ? (bins[i] / peak) * ridge : 0));
      g.lineTo(right, y0);
      g.closePath();
      g.globalAlpha = 1;
      g.fillStyle = "#fff";
      g.fill();
      g.globalAlpha = 0.15 + 0.55 * age;
      g.fillStyle = color;
      g.fill();
      g.globalAlpha = 0.4 + 0.6 * age;
      g.strokeStyle = k === hists.length - 1 ? "#222" : color;
      g.lineWidth = k === hists.length - 1 ? 1.2 : 0.8;
      g.stroke();
    });
    g.globalAlpha = 1;
    // The value axis (bottom) and the step axis (right).
    g.strokeStyle = "#bbb";
    g.lineWidth = 1;
    g.beginPath();
    g.moveTo(left, bottom + 0.5);
    g.lineTo(right, bottom + 0.5);
    g.stroke();
    g.fillStyle = "#555";
    g.font = LABEL_FONT;
    // Round values (niceTicks), each labelled as the axis's step needs, with a tick mark.
    const { ticks, step } = hi > lo ? niceTicks(lo, hi, Math.max(3, Math.floor((right - left) / 70))) : { ticks: [lo], step: 1 };
    const labels = tickLabels(ticks, step) ?? ticks.map(tick);
    g.beginPath();
    ticks.forEach((v, i) => {
      const px = hi > lo ? left + ((right - left) * (v - lo)) / (hi - lo) : (left + right) / 2;
      g.moveTo(Math.round(px) + 0.5, bottom);
      g.lineTo(Math.round(px) + 0.5, bottom + 4);
      // A label at an end of the axis stays inside the plot's edges, not cut by them.
      const half = g.measureText(labels[i]).width / 2;
      const [align, x] = px - half < left ? ["left", left] : px + half > right ? ["right", right] : ["center", px];
      g.textAlign = align as CanvasTextAlign;
      g.fillText(labels[i], x, bottom + 15);
    });
    g.stroke();
    this.canvas.dataset.ticks = JSON.stringify(labels);
    g.textAlign = "left";
    for (const step of labelled) g.fillText(`step ${step}`, right + 4, baseline(step) + 4);
  }
}

function tick(v: number): string {
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(1);
  return String(Number(v.toPrecision(3)));
}

export const histogramsView: ViewDef = {
  id: "histograms",
  title: "Histograms",
  mount(host, ctx) {
    return new HistogramsView(host, ctx, {
      what: "histograms",
      plugin: "histograms",
      kind: "tensors",
      empty: "No histograms in this experiment (tensorboardX add_histogram, tf.summary.histogram).",
    }).start();
  },
};

class HistogramsView extends CardsView<HistogramCard> {
  protected make(tag: string, run: string): HistogramCard {
    return new HistogramCard(tag, run);
  }

  /** The series' histograms, downsampled as the API does (the first, the last and a uniform
   * sample between, stable as steps are added). */
  protected async load(card: HistogramCard): Promise<void> {
    const answer = await api(this.ctx, "tensors", [
      ["plugin", "histograms"],
      ["run", card.run],
      ["tag", card.tag],
      ["downsample", String(STEPS_SHOWN)],
    ]);
    if (!this.alive) return;
    card.hists = histogramsOf(answer[card.run]?.[card.tag] ?? [], `histograms ${card.tag} (${card.run})`);
    this.drawer.touch(card);
  }
}
