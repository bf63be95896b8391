// boardd's dashboard: the page shell. A bar with the views' tabs (and an experiment selector
// when the daemon serves several logdirs); the view shown is in the URL (`?view=ID`, absent
// for scalars; `?exp=NAME` for an experiment other than the first), next to the view's own
// keys. One view is mounted at a time; the views other than scalars (which keeps its own
// stream) get the stream's events from one /api/v1/stream subscription opened here while
// they are shown.
//
// Contract for tests: the bar is nav#views; each tab a[data-view=ID] (aria-current="page"
// on the one shown, data-empty when the experiment has no data for it); the view's host is
// main#view with data-view=ID; select#experiment is the experiment selector (its label shown
// with several experiments only).

import "./style.css";
import "./views/views.css";

import { initialRuns, setExperiment, Stream } from "./api";
import type { ApiAnswer } from "./api_types";
import { setPageRuns } from "./colors";
import { isTensorBoardLink } from "./url";
import { el } from "./dom";
import { FIRST_DRAW_EVENT, getApi, type MountedView, type ViewContext, type ViewDef } from "./views/common";
import { audioView } from "./views/audio";
import { distributionsView } from "./views/distributions";
import { histogramsView } from "./views/histograms";
import { hparamsView } from "./views/hparams";
import { imagesView } from "./views/images";
import { prCurvesView } from "./views/prcurves";
import { ScalarsView } from "./views/scalars";
import { statusView } from "./views/status";
import { textView } from "./views/text";

const scalarsView: ViewDef = {
  id: "scalars",
  title: "Scalars",
  mount(host) {
    const view = new ScalarsView();
    view.mount(host);
    return { unmount: () => view.unmount() };
  },
};

/** The views, in tab order. */
const VIEWS: readonly ViewDef[] = [scalarsView, imagesView, audioView, histogramsView, distributionsView, textView, prCurvesView, hparamsView, statusView];
const DEFAULT_VIEW = "scalars";

/** The plugin whose data a view shows (a tab without it is marked empty). */
const VIEW_PLUGIN: Record<string, string> = {
  scalars: "scalars",
  images: "images",
  audio: "audio",
  histograms: "histograms",
  distributions: "histograms",
  text: "text",
  pr_curves: "pr_curves",
  hparams: "hparams",
};

/** TensorBoard's tabs for data this dashboard has no view of, as the link names them
 * ("TensorBoard's UI: graphs, mesh"), each with the plugins (of /api/v1/plugins) whose data
 * it shows. */
const TENSORBOARD_ONLY: [string, string[]][] = [
  ["custom scalars", ["custom_scalars"]],
  ["mesh", ["mesh"]],
  [
    "graphs",
    ["graphs", "graph_run_metadata", "graph_run_metadata_graph", "graph_keras_model", "graph_tagged_run_metadata"],
  ],
  ["projector", ["projector"]],
];

function viewFromUrl(): ViewDef {
  const id = new URLSearchParams(location.search).get("view") ?? DEFAULT_VIEW;
  return VIEWS.find((v) => v.id === id) ?? VIEWS[0];
}

const FIRST_DRAW_WAIT_MS = 2000;
/** How often the tabs' "no data" marks are looked at again while one is shown. */
const EMPTY_TABS_RECHECK_MS = 10_000;

/** Resolves on FIRST_DRAW_EVENT, or after FIRST_DRAW_WAIT_MS. */
function afterFirstDraw(): Promise<void> {
  return new Promise((done) => {
    const timer = setTimeout(done, FIRST_DRAW_WAIT_MS);
    document.addEventListener(
      FIRST_DRAW_EVENT,
      () => {
        clearTimeout(timer);
        done();
      },
      { once: true },
    );
  });
}

function urlWith(changes: Record<string, string | null>): string {
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === "") q.delete(k);
    else q.set(k, v);
  }
  const text = q.toString();
  return `${location.pathname}${text ? `?${text}` : ""}`;
}

class Shell {
  private current: { def: ViewDef; mounted: MountedView } | null = null;
  private stream: Stream | null = null;
  private experiment: string | null = new URLSearchParams(location.search).get("exp");
  private readonly tabs = new Map<string, HTMLAnchorElement>();
  private readonly host = el("main", { id: "view" });
  private readonly select = el("select", { id: "experiment", title: "experiment (logdir)" });
  private readonly tbLink = el("a", { href: "tensorboard/", class: "tb-link" }, "TensorBoard's UI");
  private readonly selectLabel = el("label", { class: "experiment-label" }, el("span", { class: "word" }, "experiment "), this.select);
  private readonly live = el("span", { id: "shell-status" });
  private readonly notice = el("span", { id: "shell-notice", role: "status" });
  private emptyTabsTimer: ReturnType<typeof setTimeout> | null = null;

  constructor() {
    setExperiment(this.experiment);
    this.assignColors();
    const nav = el("nav", { id: "views" }, el("strong", { class: "brand" }, "boardd"));
    for (const def of VIEWS) {
      const a = el("a", { href: urlWith({ view: def.id === DEFAULT_VIEW ? null : def.id }), "data-view": def.id }, def.title);
      a.addEventListener("click", (e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
        e.preventDefault();
        history.pushState(null, "", urlWith({ view: def.id === DEFAULT_VIEW ? null : def.id }));
        this.show(def);
      });
      this.tabs.set(def.id, a);
      nav.append(a);
    }
    this.selectLabel.hidden = true;
    this.select.addEventListener("change", () => {
      const name = this.select.value;
      // The scalars view keeps its own URL keys; another experiment starts the views afresh.
      history.pushState(null, "", urlWith({ exp: name === this.select.options[0]?.value ? null : name }));
      this.experiment = new URLSearchParams(location.search).get("exp");
      setExperiment(this.experiment);
      this.assignColors();
      this.closeStream(); // it carries the experiment shown before
      this.remount();
      void this.markEmptyTabs();
    });
    this.notice.hidden = true;
    nav.append(el("span", { class: "spacer" }), this.notice, this.live, this.selectLabel, this.tbLink);
    document.body.append(nav, this.host);
    addEventListener("popstate", () => {
      const experiment = new URLSearchParams(location.search).get("exp");
      const changed = experiment !== this.experiment;
      this.experiment = experiment;
      setExperiment(this.experiment);
      this.assignColors();
      if (changed) this.closeStream();
      // Back or Forward across an experiment change: the selector names the one shown.
      this.showExperiment();
      this.show(viewFromUrl(), true);
      if (changed) void this.markEmptyTabs();
    });
    const first = viewFromUrl();
    this.show(first);
    // The experiment selector and the tabs' marks wait for the scalars view's first drawing
    // (their requests and answers are not the first paint's), at most FIRST_DRAW_WAIT_MS.
    if (first.id === "scalars") void afterFirstDraw().then(() => this.loadExperiments());
    else this.loadExperiments();
  }

  /** The page's run colours, from the experiment's whole run list (one assignment for every
   * view; the request is the one the scalars view lists its runs with). */
  private assignColors(): void {
    void setPageRuns(initialRuns().then((runs) => runs.map((r) => r.name)));
  }

  private context(): ViewContext {
    return {
      experiment: this.experiment,
      param: (name) => new URLSearchParams(location.search).get(name),
      setParams: (changes) => history.replaceState(null, "", urlWith(changes)),
    };
  }

  private show(def: ViewDef, force = false): void {
    if (this.current?.def === def && !force) return;
    this.current?.mounted.unmount();
    this.current = null;
    this.host.replaceChildren();
    this.host.dataset.view = def.id;
    document.title = `${def.title} · boardd`;
    for (const [id, a] of this.tabs) {
      if (id === def.id) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    const mounted = def.mount(this.host, this.context());
    this.current = { def, mounted };
    // The stream, for the views that take its events (scalars has its own).
    const wantsStream = Boolean(mounted.series || mounted.run);
    if (wantsStream && this.stream === null) this.openStream();
    if (!wantsStream) this.closeStream();
  }

  /** Closes the page's stream (the next view that takes its events opens one, of the
   * experiment then shown). */
  private closeStream(): void {
    if (this.stream === null) return;
    this.stream.close();
    this.stream = null;
    this.live.textContent = "";
  }

  private remount(): void {
    if (this.current) this.show(this.current.def, true);
  }

  private openStream(): void {
    this.stream = new Stream({
      series: (e) => this.current?.mounted.series?.(e),
      run: (e) => {
        this.current?.mounted.run?.(e);
        if (e.change === "created") void this.markEmptyTabs();
      },
      // The store went back in time or was swapped: the view starts again.
      reset: () => this.remount(),
      state: (connected) => {
        this.live.textContent = connected ? "live" : "reconnecting…";
        this.live.className = connected ? "live" : "down";
      },
    });
  }

  /** The experiment selector names the experiment shown (the first one without ?exp=). */
  private showExperiment(): void {
    const first = this.select.options[0];
    if (first) this.select.value = this.experiment ?? first.value;
  }

  /** Fills the experiment selector (shown with several experiments) and marks the tabs. */
  private loadExperiments(): void {
    getApi("experiments")
      .then((list) => {
        this.select.replaceChildren(...list.map((e) => el("option", { value: e.id, title: e.logdir }, e.name)));
        if (this.experiment && list.length > 0 && !list.some((e) => e.id === this.experiment)) {
          // A bookmark of another daemon's experiment: said, and the first one shown instead
          // of a view retrying 404s for ever.
          const missing = this.experiment;
          history.replaceState(null, "", urlWith({ exp: null }));
          this.experiment = null;
          setExperiment(null);
          this.assignColors();
          this.remount();
          this.notice.textContent = `no experiment "${missing}" here: showing ${list[0].name}`;
          this.notice.hidden = false;
        }
        this.showExperiment();
        this.selectLabel.hidden = list.length < 2;
        return this.markEmptyTabs();
      })
      .catch((err: unknown) => {
        console.warn("listing the experiments failed; retrying", err);
        setTimeout(() => this.loadExperiments(), 2000);
      });
  }

  /** Names on the TensorBoard link the tabs of data only TensorBoard's UI shows (its plugins
   * listing: audio, PR curves, graphs, …), so that data is not silently missing. */
  private async nameTensorBoardOnly(): Promise<void> {
    // The experiment shown (without exp=, the first: the daemon-wide listing would name every
    // experiment's data).
    const shown = this.experiment ?? this.select.options[0]?.value ?? null;
    let plugins: ApiAnswer<"plugins">;
    try {
      plugins = await getApi("plugins", shown ? [["experiment", shown]] : []);
    } catch {
      return;
    }
    const names = TENSORBOARD_ONLY.filter(([, shown]) => shown.some((plugin) => plugin in plugins)).map(([name]) => name);
    this.tbLink.textContent = names.length ? `TensorBoard's UI: ${names.join(", ")}` : "TensorBoard's UI";
    this.tbLink.title = names.length ? `this experiment also has ${names.join(", ")}: TensorBoard's UI shows them` : "";
  }

  /** Marks the tabs whose view has no data in this experiment (/api/v1/plugins). */
  private async markEmptyTabs(): Promise<void> {
    const params: [string, string][] = this.experiment ? [["experiment", this.experiment]] : [];
    let plugins: ApiAnswer<"plugins">;
    try {
      plugins = await getApi("plugins", params);
    } catch {
      return; // no store yet: every tab stays as it is
    }
    void this.nameTensorBoardOnly();
    let empty = false;
    for (const [id, plugin] of Object.entries(VIEW_PLUGIN)) {
      const a = this.tabs.get(id);
      if (!a) continue;
      if (plugin in plugins) {
        delete a.dataset.empty;
      } else {
        a.dataset.empty = "";
        empty = true;
      }
    }
    // A tab's data may come later without a new run (a first image mid-training), and the
    // shell's stream is closed while the scalars view has its own: looked at again while a
    // tab is still empty (one small request every EMPTY_TABS_RECHECK_MS).
    if (empty && this.emptyTabsTimer === null) {
      this.emptyTabsTimer = setTimeout(() => {
        this.emptyTabsTimer = null;
        void this.markEmptyTabs();
      }, EMPTY_TABS_RECHECK_MS);
    }
  }
}

// A TensorBoard bookmark (`/#scalars`, `/?darkMode=true#timeseries&…`) opens TensorBoard's UI,
// which boardd serves at `tensorboard/` (relative: under a --path-prefix too), with its state.
if (isTensorBoardLink(location.hash)) {
  location.replace(`tensorboard/${location.search}${location.hash}`);
} else {
  new Shell();
}
