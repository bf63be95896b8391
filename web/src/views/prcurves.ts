// PR curves: a card per (tag, run) drawing one step's precision–recall curve (recall across,
// precision up, both 0 to 1), with a step slider as the images have; hovering reads the
// threshold nearest the pointer with its precision, recall and counts. The curves are
// /api/v1/pr_curves (the numbers of TensorBoard's PR-curves route), so both UIs draw the same
// points.
//
// Contract for tests: each card carries data-tag, data-run, data-step (the step shown),
// data-last-step, data-steps (how many steps the slider has) and data-points (JSON: the
// [recall, precision] pairs drawn, by threshold).

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

import { runColor } from "../colors";
import type { Schemas } from "../api_types";
import { api, CardsView, el, notice, seriesCard, type ViewDef } from "./common";
import { num } from "./histmath";
import { Stepper } from "./stepper";

const HEIGHT = 240;
/** Said under a curve whose every threshold is at (0, 0). */
const NO_POSITIVE = "no true positive at any threshold: precision and recall are 0";

/** One step of /api/v1/pr_curves: a value per threshold (precision and recall may be
 * TensorBoard's spellings of non-finite values). */
export type PrStep = Schemas["PrCurveStep"];

/** A step's curve as a chart draws it: by recall, ascending (the route lists the points by
 * threshold, ascending, so recall falls); each point with its index in the route's lists. */
export function curvePoints(step: PrStep): { recall: number[]; precision: number[]; index: number[] } {
  const recall = step.recall.map(num);
  const precision = step.precision.map(num);
  const order = recall.map((_, i) => i).sort((a, b) => recall[a] - recall[b] || b - a);
  return { recall: order.map((i) => recall[i]), precision: order.map((i) => precision[i]), index: order };
}

class PrCurveCard {
  readonly root: HTMLElement;
  private readonly box = el("div", { class: "plot" });
  private readonly readout = el("div", { class: "readout" });
  readonly stepper: Stepper<PrStep>;
  private plot: uPlot | null = null;
  private width = 0;
  /** Whether the chart draws its points as dots (few distinct ones). */
  private dots = false;
  /** What the readout says while the pointer is off the chart. */
  private note = "";
  dirty = true;
  visible = false;
  stale = true;

  constructor(
    readonly tag: string,
    readonly run: string,
    onChange: () => void,
  ) {
    this.stepper = new Stepper(onChange);
    this.root = seriesCard("pr-card", tag, run, [], this.box, this.stepper.row, this.readout);
  }

  draw(): void {
    const current = this.stepper.update(this.root);
    if (current === undefined) {
      this.plot?.destroy();
      this.plot = null;
      this.box.replaceChildren(notice("no PR curve yet"));
      return;
    }
    const points = curvePoints(current);
    const pairs = points.recall.map((r, i) => [r, points.precision[i]]);
    this.root.dataset.points = JSON.stringify(pairs);
    // Points drawn as dots when there are few distinct ones (a curve of one point, e.g. every
    // threshold at (0, 0) when no label is positive, would be invisible as a line).
    const distinct = new Set(pairs.map((p) => p.join())).size;
    this.note = pairs.length && pairs.every(([r, p]) => r === 0 && p === 0) ? NO_POSITIVE : "";
    this.readout.textContent = this.note;
    const data: uPlot.AlignedData = [points.recall, points.precision];
    const width = Math.max(240, (this.box.clientWidth || 420) - 2);
    if (this.plot === null || width !== this.width || (distinct < 30) !== this.dots) {
      this.plot?.destroy();
      this.box.replaceChildren();
      this.width = width;
      this.dots = distinct < 30;
      const color = runColor(this.run);
      this.plot = new uPlot(
        {
          width,
          height: HEIGHT,
          legend: { show: false },
          scales: { x: { time: false, range: [0, 1] }, y: { range: [0, 1] } },
          axes: [{ label: "recall" }, { label: "precision" }],
          series: [{}, { stroke: color, width: 1.5, points: { show: this.dots, size: 6 } }],
          hooks: { setCursor: [(u: uPlot) => this.hover(u)] },
        },
        data,
        this.box,
      );
    } else {
      this.plot.setData(data, false);
    }
  }

  /** The threshold nearest the pointer: its precision, recall and counts. */
  private hover(u: uPlot): void {
    const i = u.cursor.idx;
    const current = this.stepper.current;
    if (i === null || i === undefined || !current) {
      this.readout.textContent = this.note;
      return;
    }
    const k = curvePoints(current).index[i];
    const show = (v: number | string | undefined): string => (v === undefined ? "–" : String(Number(num(v).toPrecision(4))));
    this.readout.textContent =
      `threshold ${show(current.thresholds[k])} · precision ${show(current.precision[k])} · recall ${show(current.recall[k])}` +
      ` · TP ${show(current.true_positives[k])} FP ${show(current.false_positives[k])} TN ${show(current.true_negatives[k])} FN ${show(current.false_negatives[k])}`;
  }
}

export const prCurvesView: ViewDef = {
  id: "pr_curves",
  title: "PR curves",
  mount(host, ctx) {
    return new PrCurvesView(host, ctx, {
      what: "PR curves",
      plugin: "pr_curves",
      kind: "tensors",
      empty: "No PR curves in this experiment (tensorboardX add_pr_curve, TensorBoard's pr_curves summaries).",
    }).start();
  },
};

class PrCurvesView extends CardsView<PrCurveCard> {
  protected make(tag: string, run: string): PrCurveCard {
    const card: PrCurveCard = new PrCurveCard(tag, run, () => this.drawer.touch(card));
    return card;
  }

  protected async load(card: PrCurveCard): Promise<void> {
    const answer = await api(this.ctx, "pr_curves", [
      ["run", card.run],
      ["tag", card.tag],
    ]);
    if (!this.alive) return;
    card.stepper.replace(answer);
    this.drawer.touch(card);
  }
}
