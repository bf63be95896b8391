// Images: a card per (tag, run) showing one step's images, with a step slider; a new step
// committed while the card follows the last step is shown at once.
//
// Contract for tests: each card carries data-tag, data-run, data-step (the step shown),
// data-last-step (the largest step held), data-steps (how many steps the slider has) and
// data-images (images shown); each <img> its data-key (the blob key).

import { el, notice, seriesCard, type ViewDef } from "./common";
import { upscale } from "./media";
import { type BlobStep, BlobStepsView, showsBlobs, Stepper } from "./stepper";

/** The first two blobs of an image step are its width and height (TensorBoard's layout). */
const FIRST_IMAGE_INDEX = "2";

class ImageCard {
  readonly root: HTMLElement;
  private readonly images = el("div", { class: "images" });
  private readonly caption = el("div", { class: "caption" });
  readonly stepper: Stepper<BlobStep>;
  dirty = true;
  visible = false;
  stale = true;

  constructor(
    readonly tag: string,
    readonly run: string,
    private readonly onChange: () => void,
  ) {
    this.stepper = new Stepper(onChange);
    this.root = seriesCard("media-card", tag, run, [], this.images, this.stepper.row, this.caption);
  }

  draw(): void {
    const current = this.stepper.update(this.root);
    if (current === undefined) {
      this.images.replaceChildren(notice("no image yet"));
      return;
    }
    const keys = current.blobs;
    if (!showsBlobs(this.images, "img", keys)) {
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
    const { index, steps } = this.stepper;
    const when = new Date(current.wall_time * 1000).toLocaleString();
    const first = this.images.querySelector("img");
    const size = first && first.naturalWidth ? `${first.naturalWidth}×${first.naturalHeight} · ` : "";
    this.caption.textContent = `${size}${when} · ${index + 1} of ${steps.length} steps`;
    this.root.dataset.images = String(keys.length);
  }
}

export const imagesView: ViewDef = {
  id: "images",
  title: "Images",
  mount(host, ctx) {
    return new ImagesView(host, ctx, {
      what: "images",
      plugin: "images",
      kind: "blob_sequences",
      empty: "No images in this experiment (tensorboardX add_image, tf.summary.image).",
    }).start();
  },
};

class ImagesView extends BlobStepsView<ImageCard> {
  protected readonly extra: [string, string][] = [["index_min", FIRST_IMAGE_INDEX]];

  protected make(tag: string, run: string): ImageCard {
    const card: ImageCard = new ImageCard(tag, run, () => this.drawer.touch(card));
    return card;
  }
}
