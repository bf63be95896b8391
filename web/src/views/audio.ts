// Audio: a card per (tag, run) with one step's clips, each a player, and a step slider as
// the images have; a new step committed while the card follows the last step is shown at once.
// The clips are the store's blobs (`/api/v1/blob/KEY`, served with the clip's media type);
// players load a clip only when played.
//
// Contract for tests: each card carries data-tag, data-run, data-step (the step shown),
// data-last-step, data-steps (how many steps the slider has) and data-clips (clips shown);
// each <audio> its data-key (the blob key).

import { el, notice, seriesCard, type ViewDef } from "./common";
import { type BlobStep, BlobStepsView, showsBlobs, Stepper } from "./stepper";

class AudioCard {
  readonly root: HTMLElement;
  private readonly clips = el("div", { class: "clips" });
  private readonly caption = el("div", { class: "caption" });
  readonly stepper: Stepper<BlobStep>;
  dirty = true;
  visible = false;
  stale = true;

  constructor(
    readonly tag: string,
    readonly run: string,
    onChange: () => void,
  ) {
    this.stepper = new Stepper(onChange);
    this.root = seriesCard("media-card audio-card", tag, run, [], this.clips, this.stepper.row, this.caption);
  }

  draw(): void {
    const current = this.stepper.update(this.root);
    if (current === undefined) {
      this.clips.replaceChildren(notice("no clip yet"));
      return;
    }
    const keys = current.blobs;
    if (!showsBlobs(this.clips, "audio", keys)) {
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
    const { index, steps } = this.stepper;
    this.caption.textContent = `${new Date(current.wall_time * 1000).toLocaleString()} · ${index + 1} of ${steps.length} steps`;
    this.root.dataset.clips = String(keys.length);
  }
}

export const audioView: ViewDef = {
  id: "audio",
  title: "Audio",
  mount(host, ctx) {
    return new AudioView(host, ctx, {
      what: "audio",
      plugin: "audio",
      kind: "blob_sequences",
      empty: "No audio in this experiment (tensorboardX add_audio, tf.summary.audio).",
    }).start();
  },
};

class AudioView extends BlobStepsView<AudioCard> {
  protected make(tag: string, run: string): AudioCard {
    const card: AudioCard = new AudioCard(tag, run, () => this.drawer.touch(card));
    return card;
  }
}
