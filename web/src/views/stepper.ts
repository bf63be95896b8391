// The step slider of a card that shows one step of a series at a time (images, audio, PR
// curves): the steps held, the one shown, and whether the card follows the last one as new
// steps are committed (it does until the slider is moved back).

import type { Schemas } from "../api_types";
import { api, CardsView, el, type SeriesCard, type ViewContext } from "./common";
import { nearestIndex } from "./steps";

export class Stepper<S extends { step: number; wall_time: number }> {
  readonly slider = el("input", { type: "range", min: "0", max: "0", step: "1", class: "step-slider" });
  readonly label = el("span", { class: "step-label" });
  /** The slider and the step it is on, for the card to place. */
  readonly row = el("div", { class: "slider-row" }, this.slider, this.label);
  steps: S[] = [];
  index = -1;
  follow = true;

  /** `onChange`: the slider moved (the card draws again). */
  constructor(onChange: () => void) {
    this.slider.addEventListener("input", () => {
      this.index = Number(this.slider.value);
      this.follow = this.index === this.steps.length - 1;
      onChange();
    });
  }

  get lastStep(): number | undefined {
    return this.steps.length ? this.steps[this.steps.length - 1].step : undefined;
  }

  /** The step shown (undefined: none held). */
  get current(): S | undefined {
    return this.steps[this.index];
  }

  /** Adds steps (after or replacing the ones held, by step). */
  merge(more: readonly S[]): void {
    const byStep = new Map(this.steps.map((s) => [s.step, s]));
    for (const s of more) byStep.set(s.step, s);
    this.replace([...byStep.values()]);
  }

  /** Holds these steps instead; the slider stays on the step it was on (the nearest one held),
   * or on the last when it follows. */
  replace(steps: readonly S[]): void {
    const shown = this.current?.step;
    this.steps = [...steps].sort((a, b) => a.step - b.step);
    if (this.follow || shown === undefined) this.index = this.steps.length - 1;
    else this.index = nearestIndex(this.steps.map((s) => s.step), shown);
  }

  /** Puts the slider and its label in step with the steps held; sets the card's data-steps,
   * data-step and data-last-step; returns the step shown. */
  update(root: HTMLElement): S | undefined {
    const n = this.steps.length;
    this.slider.max = String(Math.max(0, n - 1));
    this.slider.value = String(Math.max(0, this.index));
    this.slider.disabled = n < 2;
    root.dataset.steps = String(n);
    const current = this.current;
    if (current === undefined) {
      this.label.textContent = "";
      delete root.dataset.step;
      return undefined;
    }
    this.label.textContent = `step ${current.step}`;
    this.label.title = `${this.index + 1} of ${n} steps · ${new Date(current.wall_time * 1000).toLocaleString()}`;
    root.dataset.step = String(current.step);
    root.dataset.lastStep = String(this.steps[n - 1].step);
    return current;
  }
}

/** A view of cards of blob sequences (images, audio) that show one step at a time: a card
 * fetches the steps after the last one it holds (all of them the first time). */
export abstract class BlobStepsView<C extends SeriesCard & { readonly stepper: Stepper<BlobStep> }> extends CardsView<C> {
  /** More parameters of the blob_sequences route (images skip their width and height). */
  protected readonly extra: [string, string][] = [];

  protected async load(card: C): Promise<void> {
    const from = card.stepper.lastStep;
    const steps = await blobSteps(this.ctx, this.options.plugin, card.run, card.tag, from, this.extra);
    if (!this.alive) return;
    if (steps.length || from === undefined) {
      card.stepper.merge(steps);
      this.drawer.touch(card);
    }
  }
}

/** A step of a blob sequence as /api/v1/blob_sequences answers it. */
export type BlobStep = Schemas["BlobSequenceDatum"];

/** The steps of one series of blob sequences after `after` (all of them without), from
 * /api/v1/blob_sequences; `extra`: more parameters (images skip their width and height). */
export async function blobSteps(
  ctx: ViewContext,
  plugin: string,
  run: string,
  tag: string,
  after: number | undefined,
  extra: [string, string][] = [],
): Promise<BlobStep[]> {
  const params: [string, string][] = [["plugin", plugin], ["run", run], ["tag", tag], ...extra];
  if (after !== undefined) params.push(["step_min", String(after + 1)]);
  const answer = await api(ctx, "blob_sequences", params);
  return answer[run]?.[tag] ?? [];
}

/** Whether the elements `selector` finds in `container` show these blobs already, in this order
 * (their data-key): a card draws its media again only when the step's blobs change. */
export function showsBlobs(container: Element, selector: string, keys: readonly string[]): boolean {
  const have = [...container.querySelectorAll<HTMLElement>(selector)].map((e) => e.dataset.key);
  return have.length === keys.length && have.every((k, i) => k === keys[i]);
}
