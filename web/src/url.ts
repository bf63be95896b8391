// The view's state in the page's URL (query string), so a view can be bookmarked and shared:
// runs (a regex filter and the runs deselected), tags (a regex filter), smoothing, x axis,
// y scale (linear or log), whether outliers are ignored in the y range, the charts drawn the
// full width of the page.
// Defaults are left out of the URL; the other views' keys are left as they are.

export type XAxis = "step" | "relative" | "wall";
export const X_AXES: readonly XAxis[] = ["step", "relative", "wall"];

export interface ViewState {
  runFilter: string;
  hidden: string[];
  tagFilter: string;
  smoothing: number;
  x: XAxis;
  logY: boolean;
  /** The y range leaves out the lowest and highest 5 % of the values drawn (TensorBoard's
   * "Ignore outliers in chart scaling", on by default there too). */
  ignoreOutliers: boolean;
  /** Tags whose chart spans the page's width. */
  wide: string[];
}

export const DEFAULT_SMOOTHING = 0.6;

export function defaults(): ViewState {
  return { runFilter: "", hidden: [], tagFilter: "", smoothing: DEFAULT_SMOOTHING, x: "step", logY: false, ignoreOutliers: true, wide: [] };
}

/** The state a query string (`location.search`) describes; what it lacks or garbles is the
 * default. */
export function parseState(search: string): ViewState {
  const q = new URLSearchParams(search);
  const state = defaults();
  state.runFilter = q.get("runs") ?? "";
  state.hidden = q.getAll("hide");
  state.tagFilter = q.get("tags") ?? "";
  const smoothing = q.get("smoothing");
  if (smoothing !== null && smoothing.trim() !== "") {
    const value = Number(smoothing);
    if (Number.isFinite(value)) state.smoothing = clampSmoothing(value);
  }
  const x = q.get("x");
  if (x !== null && (X_AXES as readonly string[]).includes(x)) state.x = x as XAxis;
  state.logY = q.get("y") === "log";
  state.ignoreOutliers = q.get("outliers") !== "show";
  state.wide = q.getAll("wide");
  return state;
}

/** The query keys the scalars view owns. */
export const SCALARS_KEYS: readonly string[] = ["runs", "hide", "tags", "smoothing", "x", "y", "outliers", "wide"];

/** The query string (with its "?", or "" when empty) of a state, keeping the keys of `search`
 * (the page's current query) that are not the scalars view's. */
export function formatState(state: ViewState, search = ""): string {
  const q = new URLSearchParams(search);
  for (const key of SCALARS_KEYS) q.delete(key);
  if (state.runFilter) q.set("runs", state.runFilter);
  for (const run of [...state.hidden].sort()) q.append("hide", run);
  if (state.tagFilter) q.set("tags", state.tagFilter);
  if (state.smoothing !== DEFAULT_SMOOTHING) q.set("smoothing", String(state.smoothing));
  if (state.x !== "step") q.set("x", state.x);
  if (state.logY) q.set("y", "log");
  if (!state.ignoreOutliers) q.set("outliers", "show");
  for (const tag of [...state.wide].sort()) q.append("wide", tag);
  const text = q.toString();
  return text ? `?${text}` : "";
}

/** Smoothing weights run from 0 (none) to 0.999 (TensorBoard's slider). */
export function clampSmoothing(value: number): number {
  return Math.min(0.999, Math.max(0, value));
}

/** A user's regex, case-insensitive; a pattern that does not compile matches as plain text. */
export function matcher(pattern: string): (name: string) => boolean {
  if (!pattern) return () => true;
  try {
    const re = new RegExp(pattern, "i");
    return (name) => re.test(name);
  } catch {
    const lower = pattern.toLowerCase();
    return (name) => name.toLowerCase().includes(lower);
  }
}

/** The dashboards of TensorBoard's UI (its plugins' ids, as `/data/plugins_listing` names
 * them), whose deep links are `/#ID` (`/#scalars&_smoothingWeight=0.9`, `/?darkMode=true#timeseries`). */
const TENSORBOARD_DASHBOARDS = new Set([
  "timeseries", "scalars", "custom_scalars", "images", "audio", "debugger-v2", "graphs",
  "distributions", "histograms", "text", "pr_curves", "profile_redirect", "hparams", "mesh",
  "wit_redirect", "projector",
]);

/** Whether a URL's hash is a deep link into TensorBoard's UI (a bookmark made on TensorBoard,
 * whose UI is at `/`; boardd's is at `/tensorboard/`, and the dashboard's own URLs have no
 * hash). */
export function isTensorBoardLink(hash: string): boolean {
  const id = hash.replace(/^#/, "").split("&", 1)[0];
  try {
    return TENSORBOARD_DASHBOARDS.has(decodeURIComponent(id));
  } catch {
    return false; // not percent-encoding: not a link TensorBoard made
  }
}
