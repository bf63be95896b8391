// The scalars view: the scalars of the first experiment, one chart card per tag grouped by
// tag prefix, runs overlaid in stable colours, kept live by /api/v1/stream.
//
// The contract tests read (issue 14 §4): every scalar chart card carries data-tag="<tag>" and
// keeps current, as its data or the view change, in view or not: data-points (points drawn:
// kept for the chart's width, in the zoom window when zoomed), data-last-step (largest step
// of the runs drawn); also data-runs (JSON list of the runs drawn), data-smoothing (the
// weight), data-last-value (JSON {run: last value, smoothed when smoothing is on}),
// data-y-scale ("linear" or "log") and data-zoom ("min,max" of the x window, "" when not
// zoomed); a drawn card also data-y-range ("min,max" of its y axis), and on a log axis
// data-y-ticks and data-y-tick-labels (JSON lists: the ticks and their labels). A card out of view is not drawn (IntersectionObserver), but its attributes say
// what it will draw. Cards filtered out by the tag filter are not in the page.

import "uplot/dist/uPlot.min.css";
import "./scalars.css";

import { currentExperiment, initialRuns, listScalars, listScalarTag, readScalars, Stream, type SeriesEvent } from "../api";
import { colorsReady, runColor, runColors, tagGroup } from "../colors";
import { breakable, el } from "../dom";
import { FIRST_DRAW_EVENT, notice, renderedDescriptions } from "./common";
import { Series, toNumber, type ScalarColumns } from "../series";
import { clampSmoothing, formatState, matcher, parseState, type ViewState, type XAxis } from "../url";
import { ScalarCard } from "./scalars_card";
import { stepRange, type XRange } from "./scalars_model";

/** Points per series of a fetch for a chart `width` pixels wide: a step bucket per four pixel
 * columns, each its first, lowest, highest and last point (the API's downsample_by=extremes),
 * so no fetch misses a spike, and a series of any length costs about a point per pixel
 * column (TensorBoard's UI fetches a 1,000-point sample); a zoom fetches the window's. */
function fetchPoints(width: number): number {
  return 4 * Math.ceil(Math.max(200, width || 500) / 4);
}
/** A live point waits this long for others of the same series before its delta is fetched. */
const DELTA_DELAY_MS = 20;
/** A zoom or pan waits this long for the next before the window's points are fetched. */
const ZOOM_FETCH_DELAY_MS = 120;

/** Resolves once the next frame has been drawn (its animation-frame callbacks have run), or
 * after half a second (a page in a background tab draws no frames). */
function afterNextFrame(): Promise<void> {
  return new Promise((done) => {
    const timer = setTimeout(done, 500);
    requestAnimationFrame(() =>
      setTimeout(() => {
        clearTimeout(timer);
        done();
      }, 0),
    );
  });
}

export class ScalarsView {
  private view: ViewState = parseState(location.search);
  private runs: string[] = [];
  private readonly data = new Map<string, Map<string, Series>>(); // tag → run → series
  private readonly cards = new Map<string, ScalarCard>();
  private readonly groups = new Map<string, HTMLElement>();
  private readonly pendingDelta = new Map<string, { run: string; tag: string; from: number }>();
  private deltaTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly zoomTimers = new Map<string, ReturnType<typeof setTimeout>>();
  private frame = 0;
  private background: ReturnType<typeof setTimeout> | null = null;
  private stream: Stream | null = null;
  private readonly observer: IntersectionObserver;
  private readonly main = el("main", { id: "cards" });
  private readonly runList = el("ul", { id: "run-list" });
  private readonly status = el("span", { id: "status" }, "loading");

  private readonly element: HTMLElement;
  private mounted = false;
  /** Whether the first listing of the tags has answered (an empty page says why after it). */
  private listed = false;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  /** A window resize (a card's width follows its grid column): every card measured again. */
  private readonly onResize = (): void => {
    for (const card of this.cards.values()) card.dirty = true;
    this.schedule();
  };

  constructor() {
    this.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        const card = this.cards.get((entry.target as HTMLElement).dataset.tag ?? "");
        if (!card) continue;
        card.visible = entry.isIntersecting;
        if (card.visible && (card.dirty || card.stale)) this.schedule();
      }
    });
    this.element = el(
      "div",
      { class: "view", "data-view": "scalars" },
      this.toolbar(),
      el("div", { id: "layout" }, this.sidebar(), this.main),
    );
  }

  /** Shows the view in `root` and starts loading and streaming (again every 2 s while the
   * daemon does not answer: starting, restarting). */
  mount(root: HTMLElement): void {
    if (this.mounted) return;
    this.mounted = true;
    root.append(this.element);
    addEventListener("resize", this.onResize);
    const begin = (): void => {
      this.retryTimer = null;
      this.start().catch((err) => {
        if (!this.mounted) return;
        console.warn("loading the runs and tags failed; retrying", err);
        this.retryTimer = setTimeout(begin, 2000);
      });
    };
    begin();
  }

  /** Removes the view and stops its stream, timers and drawing. */
  unmount(): void {
    if (!this.mounted) return;
    this.mounted = false;
    removeEventListener("resize", this.onResize);
    this.stream?.close();
    this.stream = null;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    if (this.deltaTimer !== null) clearTimeout(this.deltaTimer);
    this.retryTimer = this.deltaTimer = null;
    for (const timer of this.zoomTimers.values()) clearTimeout(timer);
    this.zoomTimers.clear();
    if (this.frame) cancelAnimationFrame(this.frame);
    if (this.background !== null) clearTimeout(this.background);
    this.background = null;
    this.frame = 0;
    this.element.remove();
  }

  private toolbar(): HTMLElement {
    const tagFilter = el("input", { id: "tag-filter", type: "search", placeholder: "filter tags (regex)" });
    tagFilter.value = this.view.tagFilter;
    tagFilter.addEventListener("input", () => this.update({ tagFilter: tagFilter.value }));
    const slider = el("input", { id: "smoothing", type: "range", min: "0", max: "0.999", step: "0.001" });
    const number = el("input", { id: "smoothing-value", type: "number", min: "0", max: "0.999", step: "0.01" });
    slider.value = number.value = String(this.view.smoothing);
    const setSmoothing = (value: string): void => {
      const weight = clampSmoothing(Number(value) || 0);
      slider.value = number.value = String(weight);
      this.update({ smoothing: weight });
    };
    slider.addEventListener("input", () => setSmoothing(slider.value));
    number.addEventListener("change", () => setSmoothing(number.value));
    const axis = el(
      "select",
      { id: "x-axis" },
      el("option", { value: "step" }, "step"),
      el("option", { value: "relative" }, "relative"),
      el("option", { value: "wall" }, "wall time"),
    );
    axis.value = this.view.x;
    axis.addEventListener("change", () => this.update({ x: axis.value as XAxis }));
    const logY = el("input", { id: "log-y", type: "checkbox" });
    logY.checked = this.view.logY;
    logY.addEventListener("change", () => this.update({ logY: logY.checked }));
    const outliers = el("input", { id: "ignore-outliers", type: "checkbox" });
    outliers.checked = this.view.ignoreOutliers;
    outliers.addEventListener("change", () => this.update({ ignoreOutliers: outliers.checked }));
    return el(
      "header",
      {},
      tagFilter,
      el("label", {}, "smoothing ", slider, number),
      el("label", {}, "x axis ", axis),
      el("label", { title: "logarithmic y axis (values ≤ 0 are not drawn)" }, logY, "log y"),
      el(
        "label",
        { title: "a spike (a few points far beyond the rest of the values drawn, the smoothed lines' when smoothing) runs off the chart instead of flattening the rest, as TensorBoard's \"Ignore outliers in chart scaling\"; a curve that starts high (a learning-rate schedule, a loss) stays whole" },
        outliers,
        "ignore outliers",
      ),
      this.status,
      el("a", { href: "tensorboard/" }, "TensorBoard's UI"),
    );
  }

  private sidebar(): HTMLElement {
    const filter = el("input", { id: "run-filter", type: "search", placeholder: "filter runs (regex)" });
    filter.value = this.view.runFilter;
    filter.addEventListener("input", () => this.update({ runFilter: filter.value }));
    // All or none of the runs listed (those the filter passes; the others keep their boxes).
    const toggle = (show: boolean): void => {
      const listed = new Set(this.runs.filter(matcher(this.view.runFilter)));
      const rest = this.view.hidden.filter((r) => !listed.has(r));
      this.update({ hidden: show ? rest : [...rest, ...listed] });
    };
    const all = el("button", { type: "button", id: "runs-all", title: "show every run listed" }, "all");
    const none = el("button", { type: "button", id: "runs-none", title: "hide every run listed" }, "none");
    all.addEventListener("click", () => toggle(true));
    none.addEventListener("click", () => toggle(false));
    return el("aside", {}, filter, el("div", { class: "run-toggles" }, "runs: ", all, none), this.runList);
  }

  private update(change: Partial<ViewState>): void {
    // Another x axis has other units: a zoom window does not carry over.
    if (change.x !== undefined && change.x !== this.view.x) for (const card of this.cards.values()) card.range = null;
    this.view = { ...this.view, ...change };
    history.replaceState(null, "", `${location.pathname}${formatState(this.view, location.search)}${location.hash}`);
    this.renderRuns();
    this.layout();
    for (const card of this.cards.values()) card.dirty = true;
    this.schedule();
  }

  private shownRuns(): string[] {
    const match = matcher(this.view.runFilter);
    const hidden = new Set(this.view.hidden);
    return this.runs.filter((r) => match(r) && !hidden.has(r));
  }

  private renderRuns(): void {
    const match = matcher(this.view.runFilter);
    const hidden = new Set(this.view.hidden);
    this.runList.replaceChildren(
      ...this.runs.filter(match).map((run) => {
        const box = el("input", { type: "checkbox", "data-run": run });
        box.checked = !hidden.has(run);
        box.addEventListener("change", () => {
          const rest = this.view.hidden.filter((r) => r !== run);
          this.update({ hidden: box.checked ? rest : [...rest, run] });
        });
        const swatch = el("span", { class: "swatch" });
        swatch.style.background = runColor(run);
        return el("li", {}, el("label", { title: run }, box, swatch, ...breakable(run)));
      }),
    );
  }

  private addRun(run: string): void {
    this.addRuns([run]);
  }

  private addRuns(runs: Iterable<string>): void {
    const fresh = [...new Set(runs)].filter((r) => !this.runs.includes(r));
    if (fresh.length === 0) return;
    this.runs.push(...fresh);
    this.renderRuns();
  }

  /** A run deleted from the logdir (its directory removed): gone from the list and from every
   * chart; a card whose tag only that run had (among the series held) goes too. */
  private removeRun(run: string): void {
    const at = this.runs.indexOf(run);
    if (at < 0) return;
    this.runs.splice(at, 1);
    for (const [tag, byRun] of [...this.data]) {
      if (!byRun.delete(run)) continue;
      const card = this.cards.get(tag);
      if (!card) continue;
      if (byRun.size === 0) {
        this.observer.unobserve(card.root);
        card.destroy();
        card.root.remove();
        this.cards.delete(tag);
        this.data.delete(tag);
      } else {
        card.dirty = true;
      }
    }
    this.renderRuns();
    this.layout();
    this.schedule();
  }

  /** Shows the cards whose tag passes the filter, grouped by prefix, groups and tags sorted. */
  private layout(): void {
    const match = matcher(this.view.tagFilter);
    const tags = [...this.cards.keys()].sort();
    const wanted = new Map<string, HTMLElement[]>();
    for (const tag of tags) {
      if (!match(tag)) continue;
      const group = tagGroup(tag);
      if (!wanted.has(group)) wanted.set(group, []);
      wanted.get(group)!.push(this.cards.get(tag)!.root);
    }
    const sections: HTMLElement[] = [];
    for (const group of [...wanted.keys()].sort()) {
      let section = this.groups.get(group);
      if (!section) {
        section = el("div", { class: "group", "data-group": group }, el("h2", {}, group), el("div", { class: "grid" }));
        this.groups.set(group, section);
      }
      const grid = section.querySelector(".grid")!;
      const cards = wanted.get(group)!;
      if (cards.length !== grid.children.length || cards.some((c, i) => grid.children[i] !== c)) {
        grid.replaceChildren(...cards);
      }
      sections.push(section);
    }
    if (sections.length === 0) {
      // Nothing to show: say why (not before the first listing has answered).
      const text = !this.listed
        ? null
        : this.cards.size === 0
          ? "No scalars in this experiment yet (tensorboardX add_scalar, tf.summary.scalar, Keras' TensorBoard callback); they appear here as soon as they are written."
          : `No tag matches the filter ${JSON.stringify(this.view.tagFilter)}.`;
      const shown = this.main.firstElementChild;
      if (text === null) this.main.replaceChildren();
      else if (!(shown instanceof HTMLParagraphElement && shown.textContent === text)) this.main.replaceChildren(notice(text));
      return;
    }
    if (sections.length !== this.main.children.length || sections.some((s, i) => this.main.children[i] !== s)) {
      this.main.replaceChildren(...sections);
    }
  }

  private card(tag: string, layout = true): ScalarCard {
    let card = this.cards.get(tag);
    if (!card) {
      card = new ScalarCard(tag);
      const made = card;
      made.onRange = (range) => this.onRange(made, range);
      made.wide = this.view.wide.includes(tag);
      made.onWide = (wide) => {
        made.wide = wide;
        // The card's width changes: measured again (and the others', whose row it left).
        this.update({ wide: wide ? [...this.view.wide, tag] : this.view.wide.filter((t) => t !== tag) });
      };
      this.cards.set(tag, card);
      this.data.set(tag, new Map());
      this.observer.observe(card.root);
      if (layout) this.layout();
    }
    return card;
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const runs = this.shownRuns();
      const view = this.drawOptions();
      const cards = [...this.cards.values()].filter((c) => c.root.isConnected);
      // Widths read before any chart changes the page (no layout per card), then the cards
      // in view prepared and drawn, then the others' models (their attributes) brought up
      // to date.
      for (const card of cards) if (card.dirty) card.measure();
      // A card whose first points have not arrived yet is not drawn (an empty chart drawn
      // now would be thrown away and made again when they arrive, in the frame that matters).
      for (const card of cards) {
        if (!card.visible) continue;
        if (card.dirty) card.prepare(this.data.get(card.tag)!, runs, view);
        if (card.stale && card.loaded) card.render();
      }
      // After this frame is painted: the cards out of view.
      if (cards.some((c) => !c.visible && c.dirty) && this.background === null) {
        this.background = setTimeout(() => {
          this.background = null;
          const now = this.drawOptions();
          const shown = this.shownRuns();
          for (const card of this.cards.values()) {
            if (card.root.isConnected && !card.visible && card.dirty) card.prepare(this.data.get(card.tag)!, shown, now);
          }
        }, 0);
      }
    });
  }

  /** What the bar sets for every card's drawing. */
  private drawOptions(): { smoothing: number; x: XAxis; logY: boolean; ignoreOutliers: boolean } {
    return { smoothing: this.view.smoothing, x: this.view.x, logY: this.view.logY, ignoreOutliers: this.view.ignoreOutliers };
  }

  private touch(tag: string): void {
    const card = this.cards.get(tag);
    if (!card) return;
    card.dirty = true;
    // In view or not: the card's attributes follow its data.
    this.schedule();
  }

  /** The user moved a card's x window: drawn at once from what is held, then the window's
   * points at the chart's resolution are fetched (after a pause, as zooms come in bursts). */
  private onRange(card: ScalarCard, range: XRange): void {
    card.dirty = true;
    this.schedule();
    if (range === null) return;
    const previous = this.zoomTimers.get(card.tag);
    if (previous !== undefined) clearTimeout(previous);
    this.zoomTimers.set(
      card.tag,
      setTimeout(() => {
        this.zoomTimers.delete(card.tag);
        this.fetchWindow(card, range).catch((err) => console.warn(`fetching ${card.tag}'s window failed`, err));
      }, ZOOM_FETCH_DELAY_MS),
    );
  }

  private async fetchWindow(card: ScalarCard, range: readonly [number, number]): Promise<void> {
    const byRun = this.data.get(card.tag)!;
    const runs = this.shownRuns().filter((r) => byRun.has(r));
    const steps = stepRange(
      runs.map((r) => byRun.get(r)!),
      this.view.x,
      range,
    );
    if (!steps || runs.length === 0) return;
    const answer = await readScalars(card.tag, {
      runs,
      stepMin: Math.max(0, steps[0]),
      stepMax: Math.max(0, steps[1]),
      downsample: fetchPoints(2 * card.root.clientWidth),
      downsampleBy: "extremes",
    });
    if (this.mergeAnswer(card.tag, answer) > 0 || card.range === range) this.touch(card.tag);
    card.root.dataset.zoomFetched = `${steps[0]},${steps[1]}`;
  }

  /** Merges a read's points into the series held; returns how many steps are new. */
  private mergeAnswer(tag: string, answer: Record<string, Record<string, ScalarColumns>>): number {
    const byRun = this.data.get(tag)!;
    let added = 0;
    for (const [run, perTag] of Object.entries(answer)) {
      const cols = perTag[tag];
      if (!cols) continue;
      this.addRun(run);
      let s = byRun.get(run);
      if (!s) {
        s = new Series();
        byRun.set(run, s);
      }
      added += s.length === 0 ? s.adopt(cols) : s.merge(cols.step, cols.wall_time, cols.value.map(toNumber));
    }
    return added;
  }

  private async start(): Promise<void> {
    // The stream first: what is committed while the state is fetched is not missed (once:
    // start() runs again when the first listing fails).
    this.stream ??= new Stream({
      series: (e) => this.onSeries(e),
      run: (e) => {
        if (e.change === "created") this.addRun(e.run);
        else if (e.change === "deleted") this.removeRun(e.run);
      },
      reset: () => location.reload(),
      state: (connected) => {
        this.status.textContent = connected ? "live" : "reconnecting…";
        this.status.className = connected ? "live" : "down";
      },
    });
    const [runs, listing] = await Promise.all([initialRuns(), listScalars(), colorsReady()]);
    // Runs the page's assignment did not have (it failed, or they are new) in name order, as
    // they are first seen together; runs and cards added together, then laid out once.
    const names = [...runs.map((r) => r.name), ...Object.keys(listing)];
    runColors.assign(names);
    this.addRuns(names);
    const tags = new Set<string>();
    for (const perRun of Object.values(listing)) for (const tag of Object.keys(perRun)) tags.add(tag);
    for (const tag of [...tags].sort()) this.card(tag, false);
    // A tag's description (tf.summary.scalar(..., description=)): the first run's that has one.
    let described = false;
    for (const name of names) {
      for (const [tag, info] of Object.entries(listing[name] ?? {})) {
        if (info.description) {
          this.cards.get(tag)?.describe(info.description);
          described = true;
        }
      }
    }
    if (described) this.renderDescriptions();
    this.listed = true;
    this.layout();
    // The cards in view first, in one request (what the user sees is drawn sooner); the
    // others once those are drawn, so that their answers (the server's work, the page's
    // parsing) do not hold up the first paint.
    const viewBottom = innerHeight;
    const first = [...tags].filter((tag) => {
      const r = this.cards.get(tag)!.root.getBoundingClientRect();
      return r.bottom > 0 && r.top < viewBottom;
    });
    let failed: string[] = [];
    try {
      await this.loadTags(first);
      await afterNextFrame();
    } catch {
      failed = first;
    }
    // The page shell's requests wait for this (main.ts).
    document.dispatchEvent(new Event(FIRST_DRAW_EVENT));
    if (!this.mounted) return;
    for (const tag of [...failed, ...[...tags].filter((t) => !first.includes(t))]) this.loadRetrying(tag);
  }

  /** The descriptions with their Markdown rendered (by the server, as TensorBoard's UI shows
   * them), once the cards show them as written. */
  private renderDescriptions(): void {
    const place = (run: string): number => (this.runs.includes(run) ? this.runs.indexOf(run) : this.runs.length);
    renderedDescriptions({ experiment: currentExperiment() }, "scalars", (a, b) => place(a) - place(b))
      .then((found) => {
        if (!this.mounted) return;
        for (const [tag, html] of found) this.cards.get(tag)?.rendered(html);
      })
      .catch((err: unknown) => console.warn("rendering the scalars' descriptions failed (shown as written)", err));
  }

  /** A tag first seen on the stream: its description (the stream's events do not carry it),
   * the first run's in the run list's order that has one. */
  private describeNew(tag: string): void {
    listScalarTag(tag)
      .then((listing) => {
        if (!this.mounted) return;
        const place = (run: string): number => (this.runs.includes(run) ? this.runs.indexOf(run) : this.runs.length);
        const runs = Object.keys(listing).sort((a, b) => place(a) - place(b));
        const described = runs.map((run) => listing[run][tag]?.description).find((d) => d);
        if (described) {
          this.cards.get(tag)?.describe(described);
          this.renderDescriptions();
        }
      })
      .catch((err: unknown) => console.warn(`listing ${tag} failed (its description is not shown)`, err));
  }

  /** Loads a tag's points, again every 2 s while the daemon does not answer. */
  private loadRetrying(tag: string): void {
    this.load(tag).catch((err) => {
      if (!this.mounted) return;
      console.warn(`loading ${tag} failed; retrying`, err);
      setTimeout(() => this.loadRetrying(tag), 2000);
    });
  }

  private load(tag: string): Promise<void> {
    return this.loadTags([tag]);
  }

  /** The first points of these tags' cards, in one request. */
  private async loadTags(tags: string[]): Promise<void> {
    if (tags.length === 0) return;
    const width = Math.max(...tags.map((tag) => this.cards.get(tag)!.root.clientWidth));
    const answer = await readScalars(tags, { downsample: fetchPoints(width), downsampleBy: "extremes" });
    for (const tag of tags) {
      this.mergeAnswer(tag, answer);
      this.cards.get(tag)!.loaded = true;
      this.touch(tag);
    }
  }

  private onSeries(e: SeriesEvent): void {
    if (e.plugin !== "scalars" || e.data_class !== "scalar") return;
    this.addRun(e.run);
    const isNew = !this.cards.has(e.tag);
    const card = this.card(e.tag);
    if (isNew) {
      this.loadRetrying(e.tag);
      this.describeNew(e.tag);
      return;
    }
    const byRun = this.data.get(e.tag)!;
    let s = byRun.get(e.run);
    if (!s) {
      s = new Series();
      byRun.set(e.run, s);
    }
    const before = s.lastStep;
    s.put(e.step, e.wall_time, toNumber(e.value ?? NaN));
    this.touch(e.tag);
    // The event carries a commit's last point of the series: its other points, fetched from
    // the step after the last one held (not the whole series again).
    if (card.loaded) this.queueDelta(e.run, e.tag, before === undefined ? 0 : before + 1);
  }

  private queueDelta(run: string, tag: string, from: number): void {
    const key = `${run}\u0000${tag}`;
    const pending = this.pendingDelta.get(key);
    if (!pending || from < pending.from) this.pendingDelta.set(key, { run, tag, from });
    if (this.deltaTimer === null) {
      this.deltaTimer = setTimeout(() => {
        this.deltaTimer = null;
        const batch = [...this.pendingDelta.values()];
        this.pendingDelta.clear();
        for (const d of batch) {
          // A failed delta (the daemon restarting) is not lost: the resumed stream sends the
          // series' state again, and with it a new delta from the last step held.
          this.fetchDelta(d.run, d.tag, d.from).catch((err) => console.warn("delta fetch failed", err));
        }
      }, DELTA_DELAY_MS);
    }
  }

  private async fetchDelta(run: string, tag: string, from: number): Promise<void> {
    // A commit of many points of a series comes downsampled as the first fetch (its extremes).
    const width = this.cards.get(tag)!.root.clientWidth;
    const answer = await readScalars(tag, { runs: [run], stepMin: from, downsample: fetchPoints(width), downsampleBy: "extremes" });
    if (this.mergeAnswer(tag, answer) > 0) this.touch(tag);
  }
}

