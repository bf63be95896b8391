// Audio: a card per (tag, run) with one step's clips, each a player, and a step slider as
// the images have; a new step committed while the card follows the last step is shown at once.
// The clips are the store's blobs (`/api/v1/blob/KEY`, served with the clip's media type);
// players load a clip only when played.
//
// Contract for tests: each card carries data-tag, data-run, data-step (the step shown),
// data-last-step, data-steps (how many steps the slider has) and data-clips (clips shown);
// each <audio> its data-key (the blob key).

import { runColor } from "../colors";
import { api, CardsView, el, type Listing, notice, type ViewDef } from "./common";
import { nearestIndex } from "./steps";

type Step = { step: number; wall_time: number; blobs: string[] };
type BlobAnswer = Record<string, Record<string, Step[]>>;

class AudioCard {
  readonly root: HTMLElement;
  private readonly clips = el("div", { class: "clips" });
  private readonly slider = el("input", { type: "range", min: "0", max: "0", step: "1", class: "step-slider" });
  private readonly label = el("span", { class: "step-label" });
  private readonly caption = el("div", { class: "caption" });
  steps: Step[] = [];
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
      { class: "card media-card audio-card", "data-tag": tag, "data-run": run, "data-steps": "0" },
      el("h3", { title: `${tag} (${run})` }, swatch, el("span", { class: "run-name" }, run)),
      this.clips,
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
  merge(more: Step[]): void {
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
      this.clips.replaceChildren(notice("no clip yet"));
      this.label.textContent = "";
      delete root.dataset.step;
      return;
    }
    const current = this.steps[this.index];
    const keys = current.blobs;
    const have = [...this.clips.querySelectorAll("audio")].map((a) => a.dataset.key);
    if (have.length !== keys.length || have.some((k, i) => k !== keys[i])) {
      this.clips.replaceChildren(
        ...keys.map((key, i) =>
          el(
            "div",
            { class: "clip" },
            el("span", { class: "clip-index" }, `#${i}`),
            el("audio", { controls: "", preload: "none", src: `api/v1/blob/${encodeURIComponent(key)}`, "data-key": key, title: `${this.tag} step ${current.step} #${i}` }),
          ),
        ),
      );
    }
    this.label.textContent = `step ${current.step}`;
    this.label.title = `${this.index + 1} of ${n} steps`;
    this.caption.textContent = `${new Date(current.wall_time * 1000).toLocaleString()} · ${this.index + 1} of ${n} steps`;
    root.dataset.step = String(current.step);
    root.dataset.lastStep = String(this.steps[n - 1].step);
    root.dataset.clips = String(keys.length);
  }
}

export const audioView: ViewDef = {
  id: "audio",
  title: "Audio",
  mount(host, ctx) {
    return new AudioView(host, ctx, {
      what: "audio",
      plugin: "audio",
      empty: "No audio in this experiment (tensorboardX add_audio, tf.summary.audio).",
    }).start();
  },
};

class AudioView extends CardsView<AudioCard> {
  protected list(filter: [string, string][] = []): Promise<Listing> {
    return api<Listing>(this.ctx, "blob_sequences/list", [["plugin", "audio"], ...filter]);
  }

  protected make(tag: string, run: string): AudioCard {
    const card: AudioCard = new AudioCard(tag, run, () => this.drawer.touch(card));
    return card;
  }

  /** The steps after the last one held (all of them the first time). */
  protected async load(card: AudioCard): Promise<void> {
    const from = card.lastStep;
    const params: [string, string][] = [
      ["plugin", "audio"],
      ["run", card.run],
      ["tag", card.tag],
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
