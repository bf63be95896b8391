// Text: a card per (tag, run) with its latest steps' text, newest first, as the server
// renders it (/api/v1/text: Markdown → HTML cleaned by the same allow-list TensorBoard uses,
// src/boardd/api/tensorboard/markup.py), so nothing is rendered here.
//
// Contract for tests: each card carries data-tag, data-run, data-steps (steps shown) and
// data-last-step; each step's block its data-step.

import type { ApiAnswer } from "../api_types";
import { api, CardsView, el, seriesCard, type ViewDef } from "./common";

/** /api/v1/text's answer: each step's strings as sanitized HTML. */
type TextAnswer = ApiAnswer<"text">;

class TextCard {
  readonly root: HTMLElement;
  private readonly body = el("div", { class: "text-steps" });
  answer: TextAnswer = [];
  dirty = true;
  visible = false;
  stale = true;

  constructor(
    readonly tag: string,
    readonly run: string,
  ) {
    this.root = seriesCard("text-card", tag, run, [], this.body);
  }

  draw(): void {
    const steps = [...this.answer].sort((a, b) => b.step - a.step);
    this.root.dataset.steps = String(steps.length);
    if (steps.length) this.root.dataset.lastStep = String(steps[0].step);
    this.body.replaceChildren(
      ...steps.map((s) => {
        const content = el("div", { class: "markdown" });
        // Safe: the server's allow-list cleaner (bleach, TensorBoard's tags) made this HTML.
        content.innerHTML = s.html;
        return el(
          "article",
          { "data-step": String(s.step) },
          el("div", { class: "step-label", title: new Date(s.wall_time * 1000).toLocaleString() }, `step ${s.step}`),
          content,
        );
      }),
    );
  }
}

export const textView: ViewDef = {
  id: "text",
  title: "Text",
  mount(host, ctx) {
    return new TextView(host, ctx, {
      what: "text",
      plugin: "text",
      kind: "tensors",
      empty: "No text in this experiment (tensorboardX add_text, tf.summary.text).",
    }).start();
  },
};

class TextView extends CardsView<TextCard> {
  protected make(tag: string, run: string): TextCard {
    return new TextCard(tag, run);
  }

  protected async load(card: TextCard): Promise<void> {
    const answer = await api(this.ctx, "text", [
      ["run", card.run],
      ["tag", card.tag],
    ]);
    if (!this.alive) return;
    card.answer = answer;
    this.drawer.touch(card);
  }
}
