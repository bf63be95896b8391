// The scalars view: the scalars of the first experiment, one chart card per tag grouped by
// tag prefix, runs overlaid in stable colours, kept live by /api/v1/stream.
//
// The contract tests read (issue 14 §4): every scalar chart card carries data-tag="<tag>" and,
// each time it is drawn, data-points (points drawn), data-last-step (largest step drawn);
// also data-runs (JSON list of the runs drawn), data-smoothing (the weight drawn with) and
// data-last-value (JSON {run: last value drawn, smoothed when smoothing is on}). A card out
// of view is not drawn (IntersectionObserver) and keeps the attributes of its last drawing.

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

import { type Run, listRuns, listScalars, readScalars, Stream, type SeriesEvent } from "../api";
import { runColor, tagGroup } from "../colors";
import { el } from "../dom";
import { minMaxIndices } from "../downsample";
import { Series, toNumber } from "../series";
import { smooth } from "../smoothing";
import { clampSmoothing, formatState, matcher, parseState, type ViewState, type XAxis } from "../url";

/** Points per series of the first fetch (the API's uniform downsampling). */
const FIRST_FETCH_POINTS = 5000;
/** A live point waits this long for others of the same series before its delta is fetched. */
const DELTA_DELAY_MS = 20;
const CHART_HEIGHT = 220;

class Card {
  readonly root: HTMLElement;
  private readonly plotBox: HTMLElement;
  private plot: uPlot | null = null;
  private shape = "";
  /** The user zoomed in (uPlot's drag): live redraws keep that range until a double-click. */
  private zoomed = false;
  visible = false;
  dirty = true;
  loaded = false;

  constructor(readonly tag: string) {
    this.plotBox = el("div", { class: "plot" });
    this.root = el(
      "section",
      { class: "card", "data-tag": tag, "data-points": "0" },
      el("h3", { title: tag }, tag),
      this.plotBox,
    );
  }

  draw(view: ViewState, runs: string[], series: Map<string, Series>): void {
    this.dirty = false;
    const tables: uPlot.AlignedData[] = [];
    const opts: uPlot.Series[] = [{}];
    const smoothing = view.smoothing;
    let points = 0;
    let lastStep: number | null = null;
    const lastValue: Record<string, number | null> = {};
    const drawn: string[] = [];
    const dots: string[] = [];
    const width = Math.max(200, this.plotBox.clientWidth || 400);
    for (const run of runs) {
      const s = series.get(run);
      if (!s || s.length === 0) continue;
      drawn.push(run);
      const x = xValues(s, view.x);
      const keep = minMaxIndices(x, s.value, width);
      const smoothed = smoothing > 0 ? smooth(s.value, smoothing) : null;
      const xs = keep.map((i) => x[i]);
      const raw = keep.map((i) => finiteOrNull(s.value[i]));
      const color = runColor(run);
      // A line needs two points: a series of one is drawn as a dot.
      const marker = { show: keep.length === 1, size: 6 };
      if (keep.length === 1) dots.push(run);
      if (smoothed) {
        tables.push([xs, raw, keep.map((i) => finiteOrNull(smoothed[i]))]);
        opts.push({ label: run, stroke: color + "40", width: 1, spanGaps: true, points: { show: false } });
        opts.push({ label: `${run} (smoothed)`, stroke: color, width: 1.5, spanGaps: true, points: marker });
      } else {
        tables.push([xs, raw]);
        opts.push({ label: run, stroke: color, width: 1.5, spanGaps: true, points: marker });
      }
      points += keep.length;
      const last = s.step[s.length - 1];
      lastStep = lastStep === null ? last : Math.max(lastStep, last);
      lastValue[run] = finiteOrNull((smoothed ?? s.value)[s.length - 1]);
    }
    const data: uPlot.AlignedData = tables.length ? uPlot.join(tables) : [[]];
    const shape = `${view.x}|${smoothing > 0}|${drawn.join("\u0000")}|${dots.join("\u0000")}`;
    if (this.plot === null || shape !== this.shape) {
      this.plot?.destroy();
      this.shape = shape;
      this.plot = new uPlot(
        {
          width,
          height: CHART_HEIGHT,
          legend: { show: false },
          scales: { x: { time: view.x === "wall" } },
          axes: [{ label: view.x === "relative" ? "relative (s)" : undefined }, {}],
          series: opts,
          hooks: {
            setSelect: [
              (u) => {
                if (u.select.width > 0) this.zoomed = true;
              },
            ],
          },
        },
        data,
        this.plotBox,
      );
      this.plotBox.ondblclick = () => {
        this.zoomed = false;
      };
    } else {
      this.plot.setData(data, !this.zoomed);
    }
    const root = this.root;
    root.dataset.points = String(points);
    if (lastStep === null) delete root.dataset.lastStep;
    else root.dataset.lastStep = String(lastStep);
    root.dataset.runs = JSON.stringify(drawn);
    root.dataset.smoothing = String(smoothing);
    root.dataset.lastValue = JSON.stringify(lastValue);
  }
}

function finiteOrNull(v: number): number | null {
  return Number.isFinite(v) ? v : null;
}

function xValues(s: Series, axis: XAxis): number[] {
  if (axis === "step") return s.step;
  if (axis === "wall") return s.wall;
  const start = s.wall[0];
  return s.wall.map((w) => w - start);
}

export class ScalarsView {
  private view: ViewState = parseState(location.search);
  private runs: string[] = [];
  private readonly data = new Map<string, Map<string, Series>>(); // tag → run → series
  private readonly cards = new Map<string, Card>();
  private readonly groups = new Map<string, HTMLElement>();
  private readonly pendingDelta = new Map<string, { run: string; tag: string; from: number }>();
  private deltaTimer: ReturnType<typeof setTimeout> | null = null;
  private frame = 0;
  private stream: Stream | null = null;
  private readonly observer: IntersectionObserver;
  private readonly main = el("main", { id: "cards" });
  private readonly runList = el("ul", { id: "run-list" });
  private readonly status = el("span", { id: "status" }, "loading");

  private readonly element: HTMLElement;
  private mounted = false;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;

  constructor() {
    this.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        const card = this.cards.get((entry.target as HTMLElement).dataset.tag ?? "");
        if (!card) continue;
        card.visible = entry.isIntersecting;
        if (card.visible && card.dirty) this.schedule();
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
    this.stream?.close();
    this.stream = null;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    if (this.deltaTimer !== null) clearTimeout(this.deltaTimer);
    this.retryTimer = this.deltaTimer = null;
    if (this.frame) cancelAnimationFrame(this.frame);
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
    return el(
      "header",
      {},
      tagFilter,
      el("label", {}, "smoothing ", slider, number),
      el("label", {}, "x axis ", axis),
      this.status,
      el("a", { href: "tensorboard/" }, "TensorBoard's UI"),
    );
  }

  private sidebar(): HTMLElement {
    const filter = el("input", { id: "run-filter", type: "search", placeholder: "filter runs (regex)" });
    filter.value = this.view.runFilter;
    filter.addEventListener("input", () => this.update({ runFilter: filter.value }));
    return el("aside", {}, filter, this.runList);
  }

  private update(change: Partial<ViewState>): void {
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
        return el("li", {}, el("label", {}, box, swatch, run));
      }),
    );
  }

  private addRun(run: string): void {
    if (this.runs.includes(run)) return;
    this.runs.push(run);
    this.renderRuns();
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
    if (sections.length !== this.main.children.length || sections.some((s, i) => this.main.children[i] !== s)) {
      this.main.replaceChildren(...sections);
    }
  }

  private card(tag: string): Card {
    let card = this.cards.get(tag);
    if (!card) {
      card = new Card(tag);
      this.cards.set(tag, card);
      this.data.set(tag, new Map());
      this.observer.observe(card.root);
      this.layout();
    }
    return card;
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const runs = this.shownRuns();
      for (const card of this.cards.values()) {
        if (card.visible && card.dirty && card.root.isConnected) card.draw(this.view, runs, this.data.get(card.tag)!);
      }
    });
  }

  private touch(tag: string): void {
    const card = this.cards.get(tag);
    if (!card) return;
    card.dirty = true;
    if (card.visible) this.schedule();
  }

  private async start(): Promise<void> {
    // The stream first: what is committed while the state is fetched is not missed (once:
    // start() runs again when the first listing fails).
    this.stream ??= new Stream({
      series: (e) => this.onSeries(e),
      run: (e) => {
        if (e.change === "created") this.addRun(e.run);
      },
      reset: () => location.reload(),
      state: (connected) => {
        this.status.textContent = connected ? "live" : "reconnecting…";
        this.status.className = connected ? "live" : "down";
      },
    });
    const [runs, listing] = await Promise.all([listRuns(), listScalars()]);
    for (const run of runs as Run[]) this.addRun(run.name);
    const tags = new Set<string>();
    for (const perRun of Object.values(listing)) for (const tag of Object.keys(perRun)) tags.add(tag);
    for (const tag of [...tags].sort()) this.card(tag);
    for (const tag of tags) this.loadRetrying(tag);
  }

  /** Loads a tag's points, again every 2 s while the daemon does not answer. */
  private loadRetrying(tag: string): void {
    this.load(tag).catch((err) => {
      if (!this.mounted) return;
      console.warn(`loading ${tag} failed; retrying`, err);
      setTimeout(() => this.loadRetrying(tag), 2000);
    });
  }

  private async load(tag: string): Promise<void> {
    const answer = await readScalars(tag, { downsample: FIRST_FETCH_POINTS });
    const byRun = this.data.get(tag)!;
    for (const [run, perTag] of Object.entries(answer)) {
      const cols = perTag[tag];
      if (!cols) continue;
      this.addRun(run);
      const have = byRun.get(run);
      if (have) have.merge(cols.step, cols.wall_time, cols.value.map(toNumber));
      else byRun.set(run, Series.from(cols));
    }
    this.cards.get(tag)!.loaded = true;
    this.touch(tag);
  }

  private onSeries(e: SeriesEvent): void {
    if (e.plugin !== "scalars" || e.data_class !== "scalar") return;
    this.addRun(e.run);
    const isNew = !this.cards.has(e.tag);
    const card = this.card(e.tag);
    if (isNew) {
      this.loadRetrying(e.tag);
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
    const answer = await readScalars(tag, { runs: [run], stepMin: from });
    const cols = answer[run]?.[tag];
    if (!cols) return;
    const byRun = this.data.get(tag)!;
    let s = byRun.get(run);
    if (!s) {
      s = new Series();
      byRun.set(run, s);
    }
    if (s.merge(cols.step, cols.wall_time, cols.value.map(toNumber)) > 0) this.touch(tag);
  }
}

