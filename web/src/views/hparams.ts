// Hyperparameters: a row per session (a session is a run, shown in its colour) with its
// trial (its group, when trials are named apart from runs), its group's hparams, its metrics
// and its status. A session shows as the run the user named (boardd's `run` of it): the
// session tensorboardX's or PyTorch's add_hparams wrote in a timestamped sub-run
// (lr0.01_bs128_sgd/1796660406.19) as the writer's run (lr0.01_bs128_sgd), in that run's
// colour (its curves' in scalars), the sub-run in its tooltip; or, when some trial has several sessions (repeats of one configuration),
// a row per trial as TensorBoard's table has it: its sessions' count and the mean of their
// metrics (the "rows" choice, kept in the URL as hp_rows=trials). Sortable (click a header)
// and filterable (a box per column: a regex, or MIN..MAX for numbers); above it the parallel
// coordinates of the rows shown, a line per row in its (first) run's colour. Hovering a row
// or a line highlights both. Data from /api/v1/hparams (TensorBoard's hparams API), fetched
// again when a commit touches hparams or a session's scalars.
//
// Contract for tests: the table carries data-rows (rows shown), data-sort ("KEY asc|desc") and
// data-rows-of ("sessions" or "trials"); each row data-session (what it is: the session's
// name, TensorBoard's, or a trial's), data-name (its name as shown: the run the user named, or
// the trial's), data-color-run (the run whose colour it has), data-group, data-status, and a
// cell per column with data-key and data-value (JSON; the session cell's: the name shown);
// each header th data-key; each filter input data-filter="KEY"; each line of the plot
// data-session; the plot's axes are g.axis with data-key and the class numeric or
// categorical; the choice of rows is the select[data-rows-of].

import { colorsReady, runColor, runColors } from "../colors";
import { api, Debouncer, el, notice, retrying, type ViewContext, type ViewDef } from "./common";
import {
  type Axis,
  axisOf,
  type Cell,
  type Column,
  filterRows,
  fitText,
  hasRepeatedTrials,
  type HparamsExperiment,
  parallelLayout,
  type Row,
  type RowsOf,
  type SessionGroups,
  sortRows,
  tableOf,
} from "./hptable";

const SVG = "http://www.w3.org/2000/svg";
/** Sessions fetched (one page; the table shows them all). */
const SLICE = 10000;
/** The parallel coordinates' fonts (as views.css sets them: .pc .axis-label, .pc .tick), the
 * height of a row of titles, a category label's offset from its axis and its widest (px). */
const TITLE_PX = 11;
const TICK_PX = 10;
const TITLE_LINE = 14;
const CATEGORY_DX = 6;
const MAX_CATEGORY_PX = 160;

/** The width of a text in a CSS font, in px (a canvas measures it: no layout needed). */
function textMeasure(font: string): (text: string) => number {
  const context = document.createElement("canvas").getContext("2d");
  if (!context) return (text) => text.length * 0.6 * TITLE_PX;
  context.font = font;
  const known = new Map<string, number>();
  return (text) => {
    let w = known.get(text);
    if (w === undefined) known.set(text, (w = context.measureText(text).width));
    return w;
  };
}

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string> = {}): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

function show(v: Cell | undefined): string {
  if (v === null || v === undefined) return "–";
  if (typeof v === "number") {
    if (Number.isInteger(v)) return String(v);
    return String(Number(v.toPrecision(5)));
  }
  return String(v);
}

export const hparamsView: ViewDef = {
  id: "hparams",
  title: "HParams",
  mount(host, ctx) {
    return new HparamsView(host, ctx);
  },
};

class HparamsView {
  private alive = true;
  private columns: Column[] = [];
  private rows: Row[] = [];
  private sortKey: string;
  private descending: boolean;
  private filters: Record<string, string> = {};
  private readonly debounce = new Debouncer(500);
  private readonly main = el("div", { class: "view-body hparams" });
  private readonly plot = el("div", { class: "parallel" });
  private readonly table = el("table", { class: "hp-table" });
  private readonly count = el("span", { class: "hp-count" });
  private sessions = new Set<string>();
  /** Sessions per trial (group). */
  private trialSizes = new Map<string, number>();
  /** A row per session or per trial (offered when some trial has several sessions). */
  private rowsOf: RowsOf;
  /** The last answers, to lay the table out again when the choice of rows changes. */
  private answers: [HparamsExperiment, SessionGroups] | null = null;
  private readonly rowsChoice = el(
    "select",
    { "data-rows-of": "", title: "a row per session (run), or per trial (TensorBoard's session group) with the mean of its sessions' metrics" },
    el("option", { value: "sessions" }, "a row per session"),
    el("option", { value: "trials" }, "a row per trial (mean of its sessions)"),
  );
  private readonly rowsLabel = el("label", { class: "hp-rows", hidden: "" }, "rows ", this.rowsChoice);

  constructor(
    private readonly host: HTMLElement,
    private readonly ctx: ViewContext,
  ) {
    const sort = (ctx.param("hp_sort") ?? "").split(":");
    this.sortKey = sort[0] || "session";
    this.descending = sort[1] === "desc";
    this.rowsOf = ctx.param("hp_rows") === "trials" ? "trials" : "sessions";
    this.rowsChoice.value = this.rowsOf;
    this.rowsChoice.addEventListener("change", () => {
      this.rowsOf = this.rowsChoice.value === "trials" ? "trials" : "sessions";
      if (this.answers) {
        this.layOut(...this.answers);
        // A filter of a column the other rows have (trial, sessions) would hide every row,
        // with no box left to clear it: dropped.
        const keys = new Set(["session", ...this.columns.map((c) => c.key)]);
        this.filters = Object.fromEntries(Object.entries(this.filters).filter(([key]) => keys.has(key)));
        this.render();
      }
      this.saveState();
    });
    try {
      const saved = JSON.parse(ctx.param("hp_filter") ?? "{}") as unknown;
      if (saved && typeof saved === "object") this.filters = saved as Record<string, string>;
    } catch {
      this.filters = {};
    }
    host.append(this.main);
    this.main.append(notice("loading hyperparameters…"));
    retrying("loading hparams", () => this.load(), () => this.alive);
  }

  private async load(): Promise<void> {
    const request: [string, string][] = [["request", JSON.stringify({ sliceSize: SLICE })]];
    const [experiment, groups] = await Promise.all([
      api(this.ctx, "hparams/experiment"),
      api(this.ctx, "hparams/session_groups", request),
      colorsReady(),
    ]);
    if (!this.alive) return;
    this.answers = [experiment, groups];
    this.layOut(experiment, groups);
  }

  /** The table and the plot from the hparams API's answers, with rows as chosen. */
  private layOut(experiment: HparamsExperiment, groups: SessionGroups): void {
    const repeated = hasRepeatedTrials(groups);
    this.rowsLabel.hidden = !repeated;
    // A row per trial only means something when a trial has several sessions.
    const rowsOf = repeated ? this.rowsOf : "sessions";
    const { columns, rows } = tableOf(experiment, groups, rowsOf);
    this.columns = columns;
    this.rows = rows;
    this.sessions = new Set(rows.flatMap((r) => r.runs));
    this.trialSizes = new Map();
    for (const g of groups.sessionGroups ?? []) this.trialSizes.set(g.name, (g.sessions ?? []).length);
    runColors.assign(rows.map((r) => r.color));
    this.table.dataset.rowsOf = rowsOf;
    if (rows.length === 0) {
      this.main.replaceChildren(
        notice("No hparams in this experiment (TensorBoard's hparams API: hp.hparams, hp.hparams_config; tensorboardX add_hparams)."),
      );
      return;
    }
    if (!this.table.isConnected) {
      this.main.replaceChildren(
        el("div", { class: "hp-bar" }, this.count, this.rowsLabel, el("span", { class: "hint" }, "click a header (or Tab to it, then Enter) to sort; filters: a regex, or MIN..MAX for numbers")),
        this.plot,
        el("div", { class: "hp-scroll" }, this.table),
      );
    }
    this.render();
  }

  private shown(): Row[] {
    return sortRows(filterRows(this.rows, this.columns, this.filters), this.sortKey, this.descending);
  }

  private saveState(): void {
    const filters = Object.fromEntries(Object.entries(this.filters).filter(([, v]) => v.trim()));
    this.ctx.setParams({
      hp_sort: this.sortKey === "session" && !this.descending ? null : `${this.sortKey}:${this.descending ? "desc" : "asc"}`,
      hp_filter: Object.keys(filters).length ? JSON.stringify(filters) : null,
      hp_rows: this.rowsOf === "trials" ? "trials" : null,
    });
  }

  private render(): void {
    this.renderHead();
    this.renderBody();
  }

  private renderHead(): void {
    const trials = this.table.dataset.rowsOf === "trials";
    const keys = [{ key: "session", label: trials ? "trial" : "session (run)", numeric: false }, ...this.columns];
    const head = el("tr");
    const filterRow = el("tr", { class: "filters" });
    for (const c of keys) {
      // A header sorts by its column on a click, or on Enter or Space once focused (Tab).
      const mean = trials && "kind" in c && c.kind === "metric" ? " (the mean of each trial's sessions)" : "";
      const th = el("th", { "data-key": c.key, title: `sort by ${c.label}${mean}`, tabindex: "0" }, c.label);
      if ("kind" in c) th.classList.add(c.kind);
      if (c.numeric) th.classList.add("num");
      if (c.key === this.sortKey) {
        th.classList.add(this.descending ? "desc" : "asc");
        th.setAttribute("aria-sort", this.descending ? "descending" : "ascending");
      }
      const sortBy = (): void => {
        if (this.sortKey === c.key) this.descending = !this.descending;
        else {
          this.sortKey = c.key;
          this.descending = false;
        }
        this.saveState();
        this.render();
        // The header is rebuilt: the focus stays on this column's.
        this.table.querySelector<HTMLElement>(`thead th[data-key="${CSS.escape(c.key)}"]`)?.focus();
      };
      th.addEventListener("click", sortBy);
      th.addEventListener("keydown", (e) => {
        if (e.key !== "Enter" && e.key !== " ") return;
        e.preventDefault();
        sortBy();
      });
      head.append(th);
      const input = el("input", { type: "search", "data-filter": c.key, placeholder: c.numeric ? "min..max" : "regex" });
      input.value = this.filters[c.key] ?? "";
      input.addEventListener("input", () => {
        this.filters[c.key] = input.value;
        this.saveState();
        this.renderBody();
      });
      filterRow.append(el("th", {}, input));
    }
    const thead = el("thead", {}, head, filterRow);
    const old = this.table.querySelector("thead");
    // Keep the focused filter box while typing: the header is rebuilt only on sort or load.
    if (old && old.contains(document.activeElement)) {
      old.querySelectorAll("tr")[0].replaceWith(head);
    } else if (old) old.replaceWith(thead);
    else this.table.prepend(thead);
    this.table.dataset.sort = `${this.sortKey} ${this.descending ? "desc" : "asc"}`;
  }

  private renderBody(): void {
    const rows = this.shown();
    const trials = this.table.dataset.rowsOf === "trials";
    const trialColumn = this.columns.find((c) => c.kind === "trial");
    const tbody = el("tbody");
    for (const r of rows) {
      const swatch = el("span", { class: "swatch" });
      swatch.style.background = runColor(r.color);
      // A trial row's title lists its sessions (runs); a session row's names its trial, and
      // the sub-run add_hparams wrote it in when it shows as the writer's run.
      const title = trials
        ? `${r.runs.length} session${r.runs.length === 1 ? "" : "s"}: ${r.runs.join(", ")}`
        : [r.session !== r.name ? `session ${r.session} (add_hparams' sub-run of ${r.name})` : "", `trial ${String((trialColumn && r.values[trialColumn.key]) ?? r.name)}`].filter(Boolean).join("\n");
      const tr = el(
        "tr",
        { "data-session": r.session, "data-name": r.name, "data-color-run": r.color, "data-group": r.group, "data-status": r.status },
        el("td", { class: "session", "data-key": "session", "data-value": JSON.stringify(r.name), title }, swatch, el("span", { class: "name" }, r.name)),
      );
      for (const c of this.columns) {
        const v = r.values[c.key];
        const td = el("td", { "data-key": c.key, "data-value": JSON.stringify(v ?? null) }, show(v));
        if (c.numeric) td.classList.add("num");
        if (c.kind === "trial") {
          // A trial ID may be a 64-digit hash (hp.hparams without trial_id=): cut, whole in the title.
          td.classList.add("trial");
          const size = this.trialSizes.get(r.group) ?? 1;
          td.title = size > 1 ? `trial ${r.group}: ${size} sessions` : `trial ${r.group}`;
        }
        if (c.kind === "status") td.classList.add(`status-${r.status}`);
        tr.append(td);
      }
      tr.addEventListener("mouseenter", () => this.highlight(r.session, true));
      tr.addEventListener("mouseleave", () => this.highlight(r.session, false));
      tbody.append(tr);
    }
    const old = this.table.querySelector("tbody");
    if (old) old.replaceWith(tbody);
    else this.table.append(tbody);
    this.table.dataset.rows = String(rows.length);
    this.count.textContent = `${rows.length} of ${this.rows.length} ${trials ? "trials" : "sessions"}`;
    this.drawParallel(rows);
  }

  private highlight(session: string, on: boolean): void {
    for (const node of this.main.querySelectorAll(`[data-session="${CSS.escape(session)}"]`)) node.classList.toggle("hot", on);
    this.plot.classList.toggle("hovering", on);
  }

  /** The parallel coordinates: an axis per column with values among the rows shown (hparams,
   * then metrics), a polyline per session; a missing value breaks its line. The titles are
   * laid out whole inside the plot (parallelLayout: alternate rows, or cut with the whole
   * title as a tooltip, when the axes are too close); a numeric axis's labels (its least and
   * greatest value) sit beyond its ends, off the lines; a category's label, beside its point,
   * is on a background over the lines that cross it. */
  private drawParallel(rows: Row[]): void {
    const columns = this.columns.filter((c) => c.kind !== "status" && c.kind !== "trial" && c.kind !== "sessions" && rows.some((r) => r.values[c.key] !== null && r.values[c.key] !== undefined));
    // The frame's own width (it scrolls sideways below 600 px).
    const width = Math.max(600, this.plot.clientWidth || this.main.clientWidth - 24);
    const axes = columns.map((c) => axisOf(c, rows));
    const family = getComputedStyle(this.plot).fontFamily || "sans-serif";
    const titleWidth = textMeasure(`600 ${TITLE_PX}px ${family}`);
    const tickWidth = textMeasure(`${TICK_PX}px ${family}`);
    // Room beside the edge axes: half a numeric label (centred on its axis), or the whole of
    // a category's (to the right of its axis) on the last one.
    const labelRoom = (axis: Axis | undefined, side: "left" | "right"): number => {
      if (!axis) return 0;
      const widest = Math.max(0, ...axis.ticks.map(([, text]) => tickWidth(text)));
      if (axis.column.numeric) return widest / 2;
      return side === "right" ? Math.min(widest, MAX_CATEGORY_PX) + CATEGORY_DX + 4 : 0;
    };
    const layout = parallelLayout(
      axes.map((a) => a.column.label),
      width,
      titleWidth,
      [labelRoom(axes[0], "left"), labelRoom(axes[axes.length - 1], "right")],
    );
    const titleRows = Math.max(1, ...layout.rows.map((r) => r + 1));
    const top = 38 + (titleRows - 1) * TITLE_LINE;
    const bottom = top + 200;
    const height = bottom + 22;
    const root = svg("svg", { width: String(width), height: String(height), viewBox: `0 0 ${width} ${height}`, class: "pc" });
    const x = (i: number): number => layout.xs[i];
    const y = (f: number): number => bottom - f * (bottom - top);
    const lines = svg("g", { class: "lines" });
    for (const r of rows) {
      let d = "";
      let pen = false;
      axes.forEach((axis, i) => {
        const f = axis.position(r.values[axis.column.key]);
        if (f === null) {
          pen = false;
          return;
        }
        d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(f).toFixed(1)}`;
        pen = true;
      });
      const path = svg("path", { d, stroke: runColor(r.color), "data-session": r.session });
      const title = svg("title");
      title.textContent = r.session === r.name ? r.name : `${r.name} (${r.session})`;
      path.append(title);
      path.addEventListener("mouseenter", () => this.highlight(r.session, true));
      path.addEventListener("mouseleave", () => this.highlight(r.session, false));
      lines.append(path);
    }
    root.append(lines);
    axes.forEach((axis, i) => {
      const numeric = axis.column.numeric;
      const g = svg("g", { class: `axis ${axis.column.kind} ${numeric ? "numeric" : "categorical"}`, "data-key": axis.column.key });
      g.append(svg("line", { x1: String(x(i)), x2: String(x(i)), y1: String(top), y2: String(bottom) }));
      const label = svg("text", { x: String(x(i)), y: String(14 + layout.rows[i] * TITLE_LINE), class: "axis-label" });
      label.textContent = layout.titles[i];
      if (layout.titles[i] !== axis.column.label) {
        const whole = svg("title");
        whole.textContent = axis.column.label;
        label.append(whole);
      }
      g.append(label);
      // A category's label reaches at most to the next axis.
      const room = i < axes.length - 1 ? Math.min(MAX_CATEGORY_PX, x(i + 1) - x(i) - 2 * CATEGORY_DX) : MAX_CATEGORY_PX;
      for (const [f, text] of axis.ticks) {
        if (numeric) {
          // The greatest value above the axis's top, the least below its bottom (a single
          // value, in the middle, above it too).
          const t = svg("text", { x: String(x(i)), y: String(f >= 0.5 ? top - 9 : bottom + 16), class: "tick" });
          t.textContent = text;
          g.append(t);
          continue;
        }
        const shown = fitText(text, room, tickWidth);
        const w = tickWidth(shown);
        g.append(svg("rect", { x: (x(i) + CATEGORY_DX - 2).toFixed(1), y: (y(f) - 7).toFixed(1), width: (w + 4).toFixed(1), height: "13", rx: "2", class: "tick-bg" }));
        const t = svg("text", { x: String(x(i) + CATEGORY_DX), y: (y(f) + 3.5).toFixed(1), class: "tick category" });
        t.textContent = shown;
        if (shown !== text) {
          const whole = svg("title");
          whole.textContent = text;
          t.append(whole);
        }
        g.append(t);
      }
      root.append(g);
    });
    this.plot.replaceChildren(root);
  }

  series(e: { run: string; plugin: string }): void {
    // A session's hparams, or a scalar of a session's run or of a run below it (its metrics).
    let touches = e.plugin === "hparams";
    for (let run = e.run; !touches && run; run = run.includes("/") ? run.slice(0, run.lastIndexOf("/")) : "") {
      touches = this.sessions.has(run);
    }
    if (touches) this.debounce.call("reload", () => retrying("loading hparams", () => this.load(), () => this.alive));
  }

  run(): void {
    this.debounce.call("reload", () => retrying("loading hparams", () => this.load(), () => this.alive));
  }

  unmount(): void {
    this.alive = false;
    this.debounce.close();
    this.host.replaceChildren();
  }
}
