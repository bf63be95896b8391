// Distributions: a card per (tag, run) drawing TensorBoard's compressed histograms over the
// steps: the median as a line and bands between the percentiles of ±1σ, ±2σ, ±3σ of a normal
// and the extremes, darker towards the middle. The compression is the server's
// (/api/v1/distributions, the numbers of TensorBoard's distributions route), so both UIs show
// the same numbers.
//
// Contract for tests: each card carries data-tag, data-run, data-steps (steps drawn),
// data-last-step and data-median (JSON: the last step's median).

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

import { runColor } from "../colors";
import { api, CardsView, el, seriesCard, type ViewDef } from "./common";
import { bandPairs, type DistributionAnswer, distributionColumns } from "./histmath";
import { numericX, numericY } from "./axes";

const HEIGHT = 220;

class DistributionCard {
  readonly root: HTMLElement;
  private readonly box = el("div", { class: "plot" });
  private readonly readout = el("span", { class: "readout" });
  private plot: uPlot | null = null;
  private shape = "";
  answer: DistributionAnswer = [];
  dirty = true;
  visible = false;
  stale = true;

  constructor(
    readonly tag: string,
    readonly run: string,
  ) {
    this.root = seriesCard("dist-card", tag, run, [this.readout], this.box);
  }

  private hover(u: uPlot, basisPoints: number[]): void {
    this.readout.textContent = readoutText(u, basisPoints);
  }

  draw(): void {
    const { basisPoints, columns } = distributionColumns(this.answer);
    const steps = columns[0];
    this.root.dataset.steps = String(steps.length);
    if (steps.length) {
      this.root.dataset.lastStep = String(steps[steps.length - 1]);
      const middle = basisPoints.indexOf(5000);
      if (middle >= 0) this.root.dataset.median = JSON.stringify(columns[middle + 1][steps.length - 1]);
    }
    const width = Math.max(240, (this.box.clientWidth || 420) - 2);
    const color = runColor(this.run);
    const series: uPlot.Series[] = [{ label: "step" }];
    basisPoints.forEach((bp) => {
      series.push({
        label: `${bp / 100}%`,
        stroke: bp === 5000 ? color : "transparent",
        width: bp === 5000 ? 1.5 : 0,
        points: { show: steps.length === 1 },
      });
    });
    const bands = bandPairs(basisPoints.length).map(([hi, lo]) => ({ series: [hi, lo] as [number, number], fill: color + "2e" }));
    const data = columns as unknown as uPlot.AlignedData;
    const shape = `${basisPoints.join(",")}|${width}`;
    if (this.plot === null || shape !== this.shape) {
      this.plot?.destroy();
      this.shape = shape;
      const hooks = { setCursor: [(u: uPlot) => this.hover(u, basisPoints)] };
      this.plot = new uPlot({ width, height: HEIGHT, legend: { show: false }, scales: { x: { time: false } }, axes: [numericX(undefined, true), numericY()], series, bands, hooks }, data, this.box);
    } else {
      this.plot.setData(data);
    }
  }
}

/** The step under the pointer: its median, the ±1σ band (15.87 % to 84.13 %) and the range. */
function readoutText(u: uPlot, basisPoints: number[]): string {
  const i = u.cursor.idx;
  if (i === null || i === undefined) return "";
  const at = (bp: number): string => {
    const k = basisPoints.indexOf(bp);
    const v = k < 0 ? null : u.data[k + 1][i];
    return v === null || v === undefined ? "–" : String(Number(v.toPrecision(4)));
  };
  return `step ${u.data[0][i]} · median ${at(5000)} · ±1σ [${at(1587)}, ${at(8413)}] · range [${at(0)}, ${at(10000)}]`;
}

export const distributionsView: ViewDef = {
  id: "distributions",
  title: "Distributions",
  mount(host, ctx) {
    return new DistributionsView(host, ctx, {
      what: "distributions",
      plugin: "histograms",
      kind: "tensors",
      empty: "No histograms in this experiment, so no distributions.",
    }).start();
  },
};

class DistributionsView extends CardsView<DistributionCard> {
  protected make(tag: string, run: string): DistributionCard {
    return new DistributionCard(tag, run);
  }

  protected async load(card: DistributionCard): Promise<void> {
    const answer = await api(this.ctx, "distributions", [
      ["run", card.run],
      ["tag", card.tag],
    ]);
    if (!this.alive) return;
    card.answer = answer;
    this.drawer.touch(card);
  }
}
