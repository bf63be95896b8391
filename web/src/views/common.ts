// What the views share: the view contract the page shell mounts, DOM and fetch helpers scoped
// to the selected experiment, and drawing only the cards in view.

import { initialRuns, type Run, type RunEvent, type SeriesEvent } from "../api";
import type { ApiAnswer, ApiRoute } from "../api_types";
import { colorsReady, runColor, runColors } from "../colors";
import { el } from "../dom";
import { formatState, matcher, parseState } from "../url";

/** What the shell gives a view: the experiment shown (null: the daemon's first) and the
 * page's URL parameters, which a view may read and set (its own keys only). */
/** The scalars view's event (on document) once its first cards in view are drawn: the page
 * shell's own requests (the experiment list, the tabs' marks) wait for it. */
export const FIRST_DRAW_EVENT = "boardd:first-draw";

export interface ViewContext {
  readonly experiment: string | null;
  param(name: string): string | null;
  setParams(changes: Record<string, string | null>): void;
}

/** A mounted view: the shell forwards the stream's events to it while it is shown. */
export interface MountedView {
  unmount(): void;
  series?(event: SeriesEvent): void;
  run?(event: RunEvent): void;
}

export interface ViewDef {
  /** Its name in the URL (`?view=ID`) and its tab's data-view. */
  id: string;
  title: string;
  mount(host: HTMLElement, ctx: ViewContext): MountedView;
}

export { el };

/** GET a boardd route (relative to the page, so a path prefix works) as JSON; the login
 * cookie goes along. */
export async function getJson<T>(path: string, params: [string, string][] = []): Promise<T> {
  const query = new URLSearchParams(params).toString();
  const response = await fetch(`${path}${query ? `?${query}` : ""}`, { credentials: "same-origin" });
  if (!response.ok) {
    let reason = `HTTP ${response.status}`;
    try {
      const body = (await response.json()) as { error?: { message?: string } };
      if (body.error?.message) reason += `: ${body.error.message}`;
    } catch {
      // not boardd's JSON error: the status says enough
    }
    throw new Error(`GET ${path}: ${reason}`);
  }
  return (await response.json()) as T;
}

/** GET /api/v1/ROUTE, its answer typed as the OpenAPI document describes it. */
export function getApi<R extends ApiRoute>(route: R, params: [string, string][] = []): Promise<ApiAnswer<R>> {
  return getJson<ApiAnswer<R>>(`api/v1/${route}`, params);
}

/** GET /api/v1/ROUTE of the context's experiment. */
export function api<R extends ApiRoute>(ctx: Pick<ViewContext, "experiment">, route: R, params: [string, string][] = []): Promise<ApiAnswer<R>> {
  const scoped: [string, string][] = ctx.experiment ? [["experiment", ctx.experiment], ...params] : params;
  return getApi(route, scoped);
}

/** The series' metadata by run and tag, as the `/list` routes of the cards' kinds answer. */
export type Listing = ApiAnswer<"tensors/list" | "blob_sequences/list">;

/** (tag, run) pairs of a listing, by tag then run. */
export function pairs(listing: Listing): { tag: string; run: string }[] {
  const out: { tag: string; run: string }[] = [];
  for (const [run, tags] of Object.entries(listing)) for (const tag of Object.keys(tags)) out.push({ tag, run });
  out.sort((a, b) => (a.tag === b.tag ? cmp(a.run, b.run) : cmp(a.tag, b.tag)));
  return out;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Something drawn in a card: drawn when in view and changed since its last drawing. */
export interface Drawable {
  readonly root: HTMLElement;
  dirty: boolean;
  visible: boolean;
  draw(): void;
}

/** Draws the cards in view (at most once per frame); cards out of view wait until scrolled to. */
export class LazyDrawer<C extends Drawable = Drawable> {
  private readonly cards = new Map<Element, C>();
  private readonly observer: IntersectionObserver;
  private frame = 0;

  /** `shown`: called when a card comes into view (to fetch what it lacks). */
  constructor(private readonly shown: (card: C) => void = () => undefined) {
    this.observer = new IntersectionObserver(
      (entries) => {
        for (const entry of entries) {
          const card = this.cards.get(entry.target);
          if (!card) continue;
          const was = card.visible;
          card.visible = entry.isIntersecting;
          if (card.visible && !was) this.shown(card);
          if (card.visible && card.dirty) this.schedule();
        }
      },
      { rootMargin: "200px" },
    );
  }

  add(card: C): void {
    this.cards.set(card.root, card);
    this.observer.observe(card.root);
  }

  remove(card: C): void {
    this.cards.delete(card.root);
    this.observer.unobserve(card.root);
  }

  touch(card: C): void {
    card.dirty = true;
    if (card.visible) this.schedule();
  }

  touchAll(): void {
    for (const card of this.cards.values()) card.dirty = true;
    this.schedule();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      for (const card of this.cards.values()) {
        if (card.visible && card.dirty && card.root.isConnected) {
          card.dirty = false;
          try {
            card.draw();
          } catch (err) {
            console.warn("drawing a card failed", err);
          }
        }
      }
    });
  }

  close(): void {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.observer.disconnect();
    this.cards.clear();
  }
}

/** Calls `load` again every 2 s while it fails (the daemon starting or restarting), until
 * `alive()` says the view is gone. */
export function retrying(what: string, load: () => Promise<void>, alive: () => boolean): void {
  load().catch((err: unknown) => {
    if (!alive()) return;
    console.warn(`${what} failed; retrying`, err);
    setTimeout(() => {
      if (alive()) retrying(what, load, alive);
    }, 2000);
  });
}

/** A message in place of a view's content (nothing to show, or why). */
export function notice(text: string): HTMLElement {
  return el("p", { class: "notice" }, text);
}

/** Groups cards under a heading per tag, in a grid (a group of one card is "single": on a
 * wide window such groups share a row); under the heading, the tag's summary description if it
 * has one (see describeInto). */
export function tagSection(tag: string, cards: HTMLElement[], description = "", html = ""): HTMLElement {
  const described: HTMLElement[] = [];
  if (description) {
    const box = el("div", { class: "description" });
    describeInto(box, description, html);
    described.push(box);
  }
  return el(
    "div",
    { class: cards.length === 1 ? "group single" : "group", "data-group": tag },
    el("h2", { title: tag }, tag),
    ...described,
    el("div", { class: "grid" }, ...cards),
  );
}

/** Shows a tag's summary description in `box` as TensorBoard's UI does: its Markdown rendered
 * (`html`: rendered and sanitized by the server, see renderedDescriptions) once known, the
 * text as written until then; two lines at most, the whole text in the tooltip. */
export function describeInto(box: HTMLElement, text: string, html = ""): void {
  if (html) box.innerHTML = html;
  else box.textContent = text;
  box.title = (box.textContent || text).trim();
}

/** The tags' summary descriptions of a plugin, as HTML: the Markdown rendered and sanitized by
 * the server (/api/v1/descriptions, the same HTML TensorBoard's UI shows), the first run's (in
 * `order`) that has one, by tag. */
export async function renderedDescriptions(
  ctx: Pick<ViewContext, "experiment">,
  plugin: string,
  order: (a: string, b: string) => number,
): Promise<Map<string, string>> {
  const described = await api(ctx, "descriptions", [["plugin", plugin]]);
  const out = new Map<string, string>();
  for (const run of Object.keys(described).sort(order)) {
    for (const [tag, html] of Object.entries(described[run])) {
      if (html && !out.has(tag)) out.set(tag, html);
    }
  }
  return out;
}

/** Coalesces calls per key for `delayMs` (a commit's events come in a burst). */
export class Debouncer {
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  constructor(private readonly delayMs: number) {}

  call(key: string, fn: () => void): void {
    if (this.timers.has(key)) return;
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        fn();
      }, this.delayMs),
    );
  }

  close(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}

/** The root of a card of one series (tag, run): a section with the card's classes and its
 * data-tag, data-run and data-steps, headed by the run's swatch and name (and `extra`, e.g. a
 * readout), then `body`. */
export function seriesCard(classes: string, tag: string, run: string, extra: Node[], ...body: Node[]): HTMLElement {
  const swatch = el("span", { class: "swatch" });
  swatch.style.background = runColor(run);
  return el(
    "section",
    { class: `card ${classes}`, "data-tag": tag, "data-run": run, "data-steps": "0" },
    el("h3", { title: `${tag} (${run})` }, swatch, el("span", { class: "run-name" }, run), ...extra),
    ...body,
  );
}

/** A card of one series (tag, run) of a plugin. `stale`: it lacks data the store has (not
 * fetched yet, or a commit touched it since). */
export interface SeriesCard extends Drawable {
  readonly tag: string;
  readonly run: string;
  stale: boolean;
}

export interface CardsViewOptions {
  /** What the cards show, for messages ("images"). */
  what: string;
  /** The plugin whose series the cards show (and whose stream events touch them). */
  plugin: string;
  /** The data class of its series (the list route: /api/v1/KIND/list). */
  kind: "tensors" | "blob_sequences";
  /** The message when the experiment has none. */
  empty: string;
}

/** A view of a card per (tag, run) of one plugin's series, grouped by tag: listed once, each
 * card fetched when it first comes into view and again (coalesced) when a commit touches its
 * series while it is in view; a card out of view that a commit touched is fetched when it is
 * scrolled to. The bar's tag and run filters, and the runs the scalars view's list hides, are
 * the page's (the URL keys `tags`, `runs`, `hide`): the cards they leave out are not shown,
 * hence neither fetched nor drawn. */
export abstract class CardsView<C extends SeriesCard> implements MountedView {
  protected alive = true;
  protected readonly drawer = new LazyDrawer<C>((card) => this.refresh(card));
  protected readonly cards = new Map<string, C>();
  /** A run's place in the experiment's run list. */
  private runOrder = new Map<string, number>();
  /** Tags' summary descriptions, as written and as rendered (renderedDescriptions). */
  private readonly descriptions = new Map<string, string>();
  private readonly rendered = new Map<string, string>();
  /** A renderedDescriptions request in flight, and whether a newer listing needs another. */
  private rendering = false;
  private renderAgain = false;
  private readonly debounce = new Debouncer(50);
  private readonly inFlight = new Set<C>();
  private readonly body = el("div", { class: "view-body cards-body" });
  private filters = parseState(location.search);
  private readonly tagFilter = el("input", { id: "tag-filter", type: "search", placeholder: "filter tags (regex)" });
  private readonly runFilter = el("input", { id: "run-filter", type: "search", placeholder: "filter runs (regex)" });
  private readonly shown = el("span", { class: "shown" });
  private readonly bar = el("div", { class: "card-filters", hidden: "" }, this.tagFilter, this.runFilter, this.shown);
  /** A window resize: the cards' widths follow their grid columns, and so do their drawings
   * (the data is not fetched again). */
  private readonly onResize = (): void => this.drawer.touchAll();

  constructor(
    private readonly host: HTMLElement,
    protected readonly ctx: ViewContext,
    protected readonly options: CardsViewOptions,
  ) {}

  /** The series listing ({run: {tag: metadata}}), of every series or of those `filter`
   * (the list route's parameters, e.g. [["tag", TAG]]) selects. */
  protected list(filter: [string, string][] = []): Promise<Listing> {
    return api(this.ctx, `${this.options.kind}/list`, [["plugin", this.options.plugin], ...filter]);
  }
  protected abstract make(tag: string, run: string): C;
  /** Fetches what the card lacks and touches it. */
  protected abstract load(card: C): Promise<void>;

  /** Shows the view and lists the series (the shell calls it once, after construction). */
  start(): this {
    this.tagFilter.value = this.filters.tagFilter;
    this.runFilter.value = this.filters.runFilter;
    const changed = (): void => {
      this.filters = { ...parseState(location.search), tagFilter: this.tagFilter.value, runFilter: this.runFilter.value };
      history.replaceState(null, "", `${location.pathname}${formatState(this.filters, location.search)}${location.hash}`);
      this.debounce.call("\u0000filters", () => this.layout());
    };
    this.tagFilter.addEventListener("input", changed);
    this.runFilter.addEventListener("input", changed);
    this.host.append(this.bar, this.body);
    addEventListener("resize", this.onResize);
    this.body.append(notice(`loading ${this.options.what}…`));
    retrying(`listing ${this.options.what}`, () => this.listAll(), () => this.alive);
    return this;
  }

  private async listAll(): Promise<void> {
    // The experiment's run list (as the scalars view's run list has it) orders a tag's cards.
    const [listing, runs] = await Promise.all([this.list(), initialRuns().catch((): Run[] => []), colorsReady()]);
    if (!this.alive) return;
    this.runOrder = new Map(runs.map((r, i) => [r.name, i]));
    if (this.noteDescriptions(listing)) this.renderDescriptions();
    // Runs the page's assignment did not have, in name order as they are first seen together.
    runColors.assign(Object.keys(listing));
    for (const { tag, run } of pairs(listing)) this.card(tag, run);
    this.layout();
  }

  /** Keeps each tag's description: the first run's (in run order) that has one. */
  private noteDescriptions(listing: Listing): boolean {
    let noted = false;
    for (const run of Object.keys(listing).sort((a, b) => this.byRunOrder(a, b))) {
      for (const [tag, info] of Object.entries(listing[run])) {
        if (info.description && !this.descriptions.has(tag)) {
          this.descriptions.set(tag, info.description);
          noted = true;
        }
      }
    }
    return noted;
  }

  /** A tag first seen on the stream: its description, from the listing of that tag alone
   * (the stream's events do not carry it). */
  private describeNew(tag: string): void {
    this.list([["tag", tag]])
      .then((listing) => {
        if (this.alive && this.noteDescriptions(listing)) {
          this.layout();
          this.renderDescriptions();
        }
      })
      .catch((err: unknown) => console.warn(`listing ${this.options.what} ${tag} failed (its description is not shown)`, err));
  }

  /** The descriptions' Markdown rendered (one request at a time; a listing that noted new
   * descriptions meanwhile asks again once it is answered). */
  private renderDescriptions(): void {
    if (this.rendering) {
      this.renderAgain = true;
      return;
    }
    this.rendering = true;
    renderedDescriptions(this.ctx, this.options.plugin, (a, b) => this.byRunOrder(a, b))
      .then((found) => {
        let changed = false;
        for (const [tag, html] of found) {
          if (this.rendered.get(tag) !== html) {
            this.rendered.set(tag, html);
            changed = true;
          }
        }
        if (changed && this.alive) this.layout();
      })
      .catch((err: unknown) => console.warn(`rendering ${this.options.what}' descriptions failed (shown as written)`, err))
      .finally(() => {
        this.rendering = false;
        if (this.renderAgain && this.alive) {
          this.renderAgain = false;
          this.renderDescriptions();
        }
      });
  }

  /** Orders runs as the experiment's run list does (runs it lacks last, by name). */
  private byRunOrder(a: string, b: string): number {
    return (this.runOrder.get(a) ?? Infinity) - (this.runOrder.get(b) ?? Infinity) || cmp(a, b);
  }

  private key(tag: string, run: string): string {
    return `${tag}\u0000${run}`;
  }

  private card(tag: string, run: string): C {
    const key = this.key(tag, run);
    let card = this.cards.get(key);
    if (!card) {
      card = this.make(tag, run);
      card.stale = true;
      this.cards.set(key, card);
      this.drawer.add(card);
    }
    return card;
  }

  private layout(): void {
    // The filters are shown once there is something to filter.
    this.bar.hidden = this.cards.size === 0;
    if (this.cards.size === 0) {
      this.shown.textContent = "";
      this.body.replaceChildren(notice(this.options.empty));
      return;
    }
    const tagMatch = matcher(this.filters.tagFilter);
    const runMatch = matcher(this.filters.runFilter);
    const hidden = new Set(this.filters.hidden);
    const runs = new Set<string>();
    const shownRuns = new Set<string>();
    const byTag = new Map<string, HTMLElement[]>();
    // By tag, then in the experiment's run order (the scalars run list's; runs it lacks last,
    // by name).
    const sorted = [...this.cards.values()].sort((a, b) => cmp(a.tag, b.tag) || this.byRunOrder(a.run, b.run));
    for (const card of sorted) {
      runs.add(card.run);
      if (!tagMatch(card.tag) || !runMatch(card.run) || hidden.has(card.run)) continue;
      shownRuns.add(card.run);
      if (!byTag.has(card.tag)) byTag.set(card.tag, []);
      byTag.get(card.tag)!.push(card.root);
    }
    const filtered = this.filters.tagFilter !== "" || this.filters.runFilter !== "" || hidden.size > 0;
    const unticked = [...runs].filter((r) => hidden.has(r)).length;
    this.shown.textContent = filtered
      ? `${shownRuns.size} of ${runs.size} runs` + (unticked ? ` (${unticked} unticked in Scalars' run list)` : "")
      : "";
    if (byTag.size === 0) {
      this.body.replaceChildren(notice(`No ${this.options.what} match the filters.`));
      return;
    }
    this.body.replaceChildren(...[...byTag].map(([tag, roots]) => tagSection(tag, roots, this.descriptions.get(tag), this.rendered.get(tag))));
  }

  /** Fetches a stale card (one fetch at a time per card; a commit during it fetches again). */
  private refresh(card: C): void {
    if (!card.stale || this.inFlight.has(card) || !this.alive) return;
    card.stale = false;
    this.inFlight.add(card);
    this.load(card)
      .catch((err: unknown) => {
        if (!this.alive) return;
        console.warn(`loading ${this.options.what} ${card.tag} (${card.run}) failed; retrying`, err);
        card.stale = true;
        return new Promise<void>((resolve) => setTimeout(resolve, 2000));
      })
      .finally(() => {
        this.inFlight.delete(card);
        if (card.stale && card.visible) this.refresh(card);
      });
  }

  series(e: SeriesEvent): void {
    if (e.plugin !== this.options.plugin) return;
    const isNew = !this.cards.has(this.key(e.tag, e.run));
    const newTag = isNew && ![...this.cards.values()].some((c) => c.tag === e.tag);
    const card = this.card(e.tag, e.run);
    if (isNew) this.layout();
    if (newTag) this.describeNew(e.tag);
    card.stale = true;
    if (card.visible) this.debounce.call(this.key(e.tag, e.run), () => this.refresh(card));
  }

  unmount(): void {
    this.alive = false;
    removeEventListener("resize", this.onResize);
    this.debounce.close();
    this.drawer.close();
    this.host.replaceChildren();
  }
}
