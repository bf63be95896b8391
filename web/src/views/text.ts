// Text: a card per (tag, run) with its latest steps' text, newest first, as the server
// renders it (Markdown → HTML cleaned by the same allow-list TensorBoard uses: boardd's
// TensorBoard text route, src/boardd/api/tensorboard/markup.py), so nothing is rendered here.
//
// Contract for tests: each card carries data-tag, data-run, data-steps (steps shown) and
// data-last-step; each step's block its data-step.

import { runColor } from "../colors";
import { api, Debouncer, el, LazyDrawer, type Listing, notice, pairs, retrying, tagSection, tensorboardData, type ViewContext, type ViewDef } from "./common";

type TextAnswer = { wall_time: number; step: number; text: string }[];

class TextCard {
  readonly root: HTMLElement;
  private readonly body = el("div", { class: "text-steps" });
  answer: TextAnswer = [];
  dirty = true;
  visible = false;

  constructor(
    readonly tag: string,
    readonly run: string,
  ) {
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = runColor(run);
    this.root = el(
      "section",
      { class: "card text-card", "data-tag": tag, "data-run": run, "data-steps": "0" },
      el("h3", { title: `${tag} (${run})` }, swatch, el("span", { class: "run-name" }, run)),
      this.body,
    );
  }

  draw(): void {
    const steps = [...this.answer].sort((a, b) => b.step - a.step);
    this.root.dataset.steps = String(steps.length);
    if (steps.length) this.root.dataset.lastStep = String(steps[0].step);
    this.body.replaceChildren(
      ...steps.map((s) => {
        const content = el("div", { class: "markdown" });
        // Safe: the server's allow-list cleaner (bleach, TensorBoard's tags) made this HTML.
        content.innerHTML = s.text;
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
    return new TextView(host, ctx);
  },
};

class TextView {
  private alive = true;
  private readonly drawer = new LazyDrawer();
  private readonly cards = new Map<string, TextCard>();
  private readonly debounce = new Debouncer(50);
  private readonly main = el("div", { class: "view-body" });

  constructor(
    private readonly host: HTMLElement,
    private readonly ctx: ViewContext,
  ) {
    host.append(this.main);
    this.main.append(notice("loading text…"));
    retrying("listing text", () => this.start(), () => this.alive);
  }

  private async start(): Promise<void> {
    const listing = await api<Listing>(this.ctx, "tensors/list", [["plugin", "text"]]);
    if (!this.alive) return;
    for (const { tag, run } of pairs(listing)) this.card(tag, run);
    this.layout();
    for (const card of this.cards.values()) this.loadRetrying(card);
  }

  private card(tag: string, run: string): TextCard {
    const key = `${tag}\u0000${run}`;
    let card = this.cards.get(key);
    if (!card) {
      card = new TextCard(tag, run);
      this.cards.set(key, card);
      this.drawer.add(card);
    }
    return card;
  }

  private layout(): void {
    if (this.cards.size === 0) {
      this.main.replaceChildren(notice("No text in this experiment (tensorboardX add_text, tf.summary.text)."));
      return;
    }
    const byTag = new Map<string, HTMLElement[]>();
    for (const [, card] of [...this.cards].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (!byTag.has(card.tag)) byTag.set(card.tag, []);
      byTag.get(card.tag)!.push(card.root);
    }
    this.main.replaceChildren(...[...byTag].map(([tag, roots]) => tagSection(tag, roots)));
  }

  private loadRetrying(card: TextCard): void {
    retrying(`loading text ${card.tag}`, () => this.load(card), () => this.alive);
  }

  private async load(card: TextCard): Promise<void> {
    const answer = await tensorboardData<TextAnswer>(this.ctx, "plugin/text/text", [
      ["run", card.run],
      ["tag", card.tag],
    ]);
    if (!this.alive) return;
    card.answer = answer;
    this.drawer.touch(card);
  }

  series(e: { run: string; tag: string; plugin: string }): void {
    if (e.plugin !== "text") return;
    const key = `${e.tag}\u0000${e.run}`;
    const isNew = !this.cards.has(key);
    const card = this.card(e.tag, e.run);
    if (isNew) this.layout();
    this.debounce.call(key, () => this.loadRetrying(card));
  }

  unmount(): void {
    this.alive = false;
    this.debounce.close();
    this.drawer.close();
    this.host.replaceChildren();
  }
}
