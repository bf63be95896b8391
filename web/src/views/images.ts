// Images: a card per (tag, run) showing one step's images, with a step slider; a new step
// committed while the card follows the last step is shown at once.
//
// Contract for tests: each card carries data-tag, data-run, data-step (the step shown),
// data-last-step (the largest step held), data-steps (how many steps the slider has) and
// data-images (images shown); each <img> its data-key (the blob key).

import { runColor } from "../colors";
import { api, CardsView, el, type Listing, notice, type ViewDef } from "./common";
import { nearestIndex } from "./steps";
import { upscale } from "./media";

type BlobAnswer = Record<string, Record<string, { step: number; wall_time: number; blobs: string[] }[]>>;

/** The first two blobs of an image step are its width and height (TensorBoard's layout). */
const FIRST_IMAGE_INDEX = "2";

class ImageCard {
  readonly root: HTMLElement;
  private readonly images = el("div", { class: "images" });
  private readonly slider = el("input", { type: "range", min: "0", max: "0", step: "1", class: "step-slider" });
  private readonly label = el("span", { class: "step-label" });
  private readonly caption = el("div", { class: "caption" });
  steps: { step: number; wall_time: number; blobs: string[] }[] = [];
  index = -1;
  follow = true;
  dirty = true;
  visible = false;
  stale = true;

  constructor(
    readonly tag: string,
    readonly run: string,
    private readonly onChange: () => void,
  ) {
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = runColor(run);
    this.root = el(
      "section",
      { class: "card media-card", "data-tag": tag, "data-run": run, "data-steps": "0" },
      el("h3", { title: `${tag} (${run})` }, swatch, el("span", { class: "run-name" }, run)),
      this.images,
      el("div", { class: "slider-row" }, this.slider, this.label),
      this.caption,
    );
    this.slider.addEventListener("input", () => {
      this.index = Number(this.slider.value);
      this.follow = this.index === this.steps.length - 1;
      this.onChange();
    });
  }

  get lastStep(): number | undefined {
    return this.steps.length ? this.steps[this.steps.length - 1].step : undefined;
  }

  /** Adds steps (sorted, after or replacing the ones held). */
  merge(more: { step: number; wall_time: number; blobs: string[] }[]): void {
    const shown = this.index >= 0 ? this.steps[this.index]?.step : undefined;
    const byStep = new Map(this.steps.map((s) => [s.step, s]));
    for (const s of more) byStep.set(s.step, s);
    this.steps = [...byStep.values()].sort((a, b) => a.step - b.step);
    if (this.follow || shown === undefined) this.index = this.steps.length - 1;
    else this.index = nearestIndex(this.steps.map((s) => s.step), shown);
  }

  draw(): void {
    const n = this.steps.length;
    this.slider.max = String(Math.max(0, n - 1));
    this.slider.value = String(Math.max(0, this.index));
    this.slider.disabled = n < 2;
    const root = this.root;
    root.dataset.steps = String(n);
    if (n === 0) {
      this.images.replaceChildren(notice("no image yet"));
      this.label.textContent = "";
      delete root.dataset.step;
      return;
    }
    const current = this.steps[this.index];
    const keys = current.blobs;
    const have = [...this.images.querySelectorAll("img")].map((i) => i.dataset.key);
    if (have.length !== keys.length || have.some((k, i) => k !== keys[i])) {
      this.images.replaceChildren(
        ...keys.map((key, i) => {
          const img = el("img", { src: `api/v1/blob/${encodeURIComponent(key)}`, alt: `${this.tag} step ${current.step} #${i}`, "data-key": key });
          img.addEventListener("load", () => {
            // Small images (MNIST digits) scaled up without blurring, as TensorBoard shows them,
            // by a whole factor chosen on their larger side (a 6×200 strip stays 200 high).
            const factor = upscale(img.naturalWidth, img.naturalHeight);
            if (factor > 1) {
              img.classList.add("pixelated");
              img.style.width = `${img.naturalWidth * factor}px`;
            }
            if (i === 0) this.onChange();
          });
          return img;
        }),
      );
    }
    const when = new Date(current.wall_time * 1000).toLocaleString();
    this.label.textContent = `step ${current.step}`;
    this.label.title = `${this.index + 1} of ${n} steps`;
    const first = this.images.querySelector("img");
    const size = first && first.naturalWidth ? `${first.naturalWidth}×${first.naturalHeight} · ` : "";
    this.caption.textContent = `${size}${when} · ${this.index + 1} of ${n} steps`;
    root.dataset.step = String(current.step);
    root.dataset.lastStep = String(this.steps[n - 1].step);
    root.dataset.images = String(keys.length);
  }
}

export const imagesView: ViewDef = {
  id: "images",
  title: "Images",
  mount(host, ctx) {
    return new ImagesView(host, ctx, {
      what: "images",
      plugin: "images",
      empty: "No images in this experiment (tensorboardX add_image, tf.summary.image).",
    }).start();
  },
};

class ImagesView extends CardsView<ImageCard> {
  protected list(filter: [string, string][] = []): Promise<Listing> {
    return api<Listing>(this.ctx, "blob_sequences/list", [["plugin", "images"], ...filter]);
  }

  protected make(tag: string, run: string): ImageCard {
    const card: ImageCard = new ImageCard(tag, run, () => this.drawer.touch(card));
    return card;
  }

  /** The steps after the last one held (all of them the first time). */
  protected async load(card: ImageCard): Promise<void> {
    const from = card.lastStep;
    const params: [string, string][] = [
      ["plugin", "images"],
      ["run", card.run],
      ["tag", card.tag],
      ["index_min", FIRST_IMAGE_INDEX],
    ];
    if (from !== undefined) params.push(["step_min", String(from + 1)]);
    const answer = await api<BlobAnswer>(this.ctx, "blob_sequences", params);
    if (!this.alive) return;
    const steps = answer[card.run]?.[card.tag] ?? [];
    if (steps.length || from === undefined) {
      card.merge(steps);
      this.drawer.touch(card);
    }
  }
}
