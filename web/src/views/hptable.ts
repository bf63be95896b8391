// Pure parts of the hparams view: the table's rows and columns from the hparams API's
// answers, sorting, filtering, and the parallel-coordinates axes.

import type { ApiAnswer, Schemas } from "../api_types";

export type Cell = number | string | boolean | null;

export interface Column {
  /** hparam name, or metric "group/tag" ("tag" when its group is empty), or "status", or
   * "trial" (the session's group), or "sessions" (a trial row's count of sessions). */
  key: string;
  label: string;
  kind: "trial" | "sessions" | "hparam" | "metric" | "status";
  /** Every value is a number (or missing). */
  numeric: boolean;
}

export interface Row {
  /** What the row is: a session's name (TensorBoard's: the run holding its hparams), or a
   * trial row's trial (its group's name). */
  session: string;
  /** The row's name as shown: the run the user named for the session (boardd's `run`: the
   * writer's run of an add_hparams sub-run), or the trial's display name. */
  name: string;
  /** The session's group (its trial), by its name. */
  group: string;
  status: string;
  values: Record<string, Cell>;
  /** The runs of the sessions the row stands for (a session row: its own; a trial row: its
   * trial's, in the API's order). */
  runs: string[];
  /** The run whose colour the row takes (the scalars' curves of that run have it). */
  color: string;
}

/** What a row of the table is: a session, or a trial (TensorBoard's session group) with the
 * mean of its sessions' metrics, as TensorBoard's table shows it. */
export type RowsOf = "sessions" | "trials";

type MetricName = Schemas["MetricName"];

/** /api/v1/hparams/experiment's answer. A metric an experiment summary declares without a
 * name has none in it (proto3 JSON prints no unset message): its column is keyed "". */
export type HparamsExperiment = ApiAnswer<"hparams/experiment">;
/** /api/v1/hparams/session_groups' answer. */
export type SessionGroups = ApiAnswer<"hparams/session_groups">;

export function metricKey(name: MetricName): string {
  return name.group ? `${name.group}/${name.tag ?? ""}` : (name.tag ?? "");
}

const STATUS_WORDS: Record<string, string> = {
  STATUS_SUCCESS: "success",
  STATUS_FAILURE: "failure",
  STATUS_RUNNING: "running",
  STATUS_UNKNOWN: "unknown",
};

function asCell(v: unknown): Cell {
  if (v === "NaN") return NaN;
  if (v === "Infinity") return Infinity;
  if (v === "-Infinity") return -Infinity;
  if (typeof v === "number" || typeof v === "string" || typeof v === "boolean") return v;
  return null;
}

/** The first of `candidates` that is not `taken` (a column key of our own must not overwrite
 * an hparam's or a metric's). */
function freeKey(candidates: string[], taken: Set<string>): string {
  return candidates.find((k) => !taken.has(k)) ?? `\u0000${candidates[0]}`;
}

/** A trial's status from its sessions': the one they share, else each with its count, most
 * frequent first ("2 success, 1 running"). */
export function trialStatus(statuses: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
  if (counts.size <= 1) return statuses[0] ?? "unknown";
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([s, n]) => `${n} ${s}`).join(", ");
}

/** The table's rows and columns.
 *
 * `rowsOf` "sessions" (the default): a row per session (a session is a run), with its
 * group's hparams and its own metrics. The group is TensorBoard's trial
 * (`hp.hparams(..., trial_id=)`, Keras's `hp.KerasCallback(trial_id=)`; a hash of the hparams
 * when none was given): a "trial" column comes first when some session's group is not named
 * as the session is, so that the sessions of a trial (repeats of one configuration) can be
 * told, sorted and filtered together.
 *
 * `rowsOf` "trials": a row per trial, as TensorBoard's table has them: the trial's hparams, a
 * "sessions" column (how many), each metric the mean of its sessions' values (the hparams
 * API's own aggregation, so the same numbers as TensorBoard's), and their statuses. */
export function tableOf(experiment: HparamsExperiment, groups: SessionGroups, rowsOf: RowsOf = "sessions"): { columns: Column[]; rows: Row[] } {
  const taken = new Set([...(experiment.hparamInfos ?? []).map((h) => h.name), ...(experiment.metricInfos ?? []).map((m) => metricKey(m.name ?? {}))]);
  const trialKey = freeKey(["trial", "trial id", "trial (group)"], taken);
  const sessionsKey = freeKey(["sessions", "session count", "sessions (count)"], taken);
  const rows: Row[] = [];
  for (const group of groups.sessionGroups ?? []) {
    const hparams: Record<string, Cell> = {};
    for (const [name, v] of Object.entries(group.hparams ?? {})) hparams[name] = asCell(v);
    const sessions = group.sessions ?? [];
    const statusOf = (session: { status?: string }): string => STATUS_WORDS[session.status ?? ""] ?? "unknown";
    // boardd's name of the trial (an add_hparams session's group shows as its run).
    const trialName = group.displayName ?? group.name;
    if (rowsOf === "trials") {
      if (sessions.length === 0) continue;
      const values: Record<string, Cell> = { ...hparams };
      for (const m of group.metricValues ?? []) values[metricKey(m.name)] = asCell(m.value);
      const statuses = sessions.map(statusOf);
      values.status = trialStatus(statuses);
      values[sessionsKey] = sessions.length;
      // The row's status word: the one its sessions share, else "mixed" (the cell lists them).
      const status = new Set(statuses).size === 1 ? statuses[0] : "mixed";
      const runs = sessions.map((x) => x.name);
      rows.push({ session: group.name, name: trialName, group: group.name, status, values, runs, color: sessions[0].run ?? sessions[0].name });
      continue;
    }
    for (const session of sessions) {
      const values: Record<string, Cell> = { ...hparams };
      for (const m of session.metricValues ?? []) values[metricKey(m.name)] = asCell(m.value);
      const status = statusOf(session);
      values.status = status;
      values[trialKey] = trialName;
      const run = session.run ?? session.name;
      rows.push({ session: session.name, name: run, group: group.name, status, values, runs: [session.name], color: run });
    }
  }
  const columns: Column[] = [];
  if (rowsOf === "trials") columns.push({ key: sessionsKey, label: "sessions", kind: "sessions", numeric: true });
  // (By the API's names: add_hparams' sessions, each its own trial, have none.)
  else if (rows.some((r) => r.group !== r.session)) columns.push({ key: trialKey, label: "trial", kind: "trial", numeric: false });
  const numeric = (key: string): boolean =>
    rows.every((r) => r.values[key] === null || r.values[key] === undefined || typeof r.values[key] === "number");
  for (const h of experiment.hparamInfos ?? []) {
    columns.push({ key: h.name, label: h.displayName || h.name, kind: "hparam", numeric: numeric(h.name) });
  }
  for (const m of experiment.metricInfos ?? []) {
    const key = metricKey(m.name ?? {});
    columns.push({ key, label: m.displayName || key, kind: "metric", numeric: numeric(key) });
  }
  columns.push({ key: "status", label: "status", kind: "status", numeric: false });
  return { columns, rows };
}

/** Whether some trial has more than one session (then a row per trial differs from a row per
 * session). */
export function hasRepeatedTrials(groups: SessionGroups): boolean {
  return (groups.sessionGroups ?? []).some((g) => (g.sessions ?? []).length > 1);
}

/** Orders two cells: missing last, numbers (NaN after the others) before booleans before
 * strings. */
export function compareCells(a: Cell | undefined, b: Cell | undefined): number {
  const rank = (v: Cell | undefined): number =>
    v === null || v === undefined ? 4 : typeof v === "number" ? (Number.isNaN(v) ? 1 : 0) : typeof v === "boolean" ? 2 : 3;
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (typeof a === "number" && typeof b === "number") return Number.isNaN(a) ? 0 : a - b;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  return 0;
}

/** The rows sorted by a column ("session": the name shown; missing values last in both
 * directions; the name shown, then the session's, breaks ties), a new array. */
export function sortRows(rows: readonly Row[], key: string, descending: boolean): Row[] {
  return [...rows].sort((x, y) => {
    const a = key === "session" ? x.name : x.values[key];
    const b = key === "session" ? y.name : y.values[key];
    const missA = a === null || a === undefined;
    const missB = b === null || b === undefined;
    if (missA !== missB) return missA ? 1 : -1;
    const c = compareCells(a, b);
    if (c !== 0) return descending ? -c : c;
    if (x.name !== y.name) return x.name < y.name ? -1 : 1;
    return x.session < y.session ? -1 : x.session > y.session ? 1 : 0;
  });
}

/** A column filter as typed: for numbers `MIN..MAX` (either end may be left out) or a number
 * (equal); otherwise, and for text, a regular expression (case-insensitive, partial; one that
 * does not compile matches as plain text). Empty: everything passes. A filter never keeps a
 * missing value. */
export function parseFilter(text: string, numeric: boolean): (v: Cell | undefined) => boolean {
  const t = text.trim();
  if (!t) return () => true;
  if (numeric) {
    const range = /^(-?[\d.eE+-]*)\s*\.\.\s*(-?[\d.eE+-]*)$/.exec(t);
    if (range) {
      const lo = range[1] === "" ? -Infinity : Number(range[1]);
      const hi = range[2] === "" ? Infinity : Number(range[2]);
      if (!Number.isNaN(lo) && !Number.isNaN(hi)) return (v) => typeof v === "number" && v >= lo && v <= hi;
    }
    const exact = Number(t);
    if (!Number.isNaN(exact)) return (v) => typeof v === "number" && v === exact;
  }
  let test: (s: string) => boolean;
  try {
    const re = new RegExp(t, "i");
    test = (s) => re.test(s);
  } catch {
    const lower = t.toLowerCase();
    test = (s) => s.toLowerCase().includes(lower);
  }
  return (v) => v !== null && v !== undefined && test(String(v));
}

/** The rows passing every column's filter (`filters`: column key → text typed; "session"
 * filters the name shown). */
export function filterRows(rows: readonly Row[], columns: readonly Column[], filters: Record<string, string>): Row[] {
  const tests: [string, (v: Cell | undefined) => boolean][] = [];
  for (const [key, text] of Object.entries(filters)) {
    if (!text.trim()) continue;
    const column = columns.find((c) => c.key === key);
    tests.push([key, parseFilter(text, column?.numeric ?? false)]);
  }
  return rows.filter((r) => tests.every(([key, test]) => test(key === "session" ? r.name : r.values[key])));
}

/** A parallel-coordinates axis: maps a cell to [0, 1] (0 at the bottom), or null (missing). */
export interface Axis {
  column: Column;
  position(v: Cell | undefined): number | null;
  /** Labels along the axis: [fraction, text]. */
  ticks: [number, string][];
}

export function axisOf(column: Column, rows: readonly Row[]): Axis {
  const present = rows.map((r) => r.values[column.key]).filter((v): v is Exclude<Cell, null> => v !== null && v !== undefined);
  if (column.numeric) {
    const nums = present.filter((v): v is number => typeof v === "number" && Number.isFinite(v));
    const lo = nums.length ? Math.min(...nums) : 0;
    const hi = nums.length ? Math.max(...nums) : 1;
    // Positive values over several decades (learning rates): a log scale, as one reads them.
    const log = lo > 0 && hi / lo >= 100;
    const f = log ? Math.log10 : (x: number): number => x;
    const a = f(lo);
    const b = f(hi);
    const position = (v: Cell | undefined): number | null => {
      if (typeof v !== "number" || !Number.isFinite(v)) return null;
      if (log && v <= 0) return null;
      return b === a ? 0.5 : (f(v) - a) / (b - a);
    };
    const label = (x: number): string => String(Number(x.toPrecision(3)));
    const ticks: [number, string][] = b === a ? [[0.5, label(lo)]] : [[0, label(lo)], [1, label(hi)]];
    return { column, position, ticks };
  }
  const values = [...new Set(present.map((v) => String(v)))].sort();
  const at = (i: number): number => (values.length === 1 ? 0.5 : i / (values.length - 1));
  return {
    column,
    position: (v) => {
      if (v === null || v === undefined) return null;
      const i = values.indexOf(String(v));
      return i < 0 ? null : at(i);
    },
    ticks: values.map((v, i) => [at(i), v]),
  };
}

/** What the parallel coordinates keep clear of the plot's left and right edges, and between
 * two titles of one row (px). */
export const PLOT_EDGE = 6;
export const TITLE_GAP = 12;

/** `text` whole if it is at most `max` px wide, else its longest start that fits with "…". */
export function fitText(text: string, max: number, measure: (text: string) => number): string {
  if (measure(text) <= max) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (measure(`${text.slice(0, mid)}…`) <= max) lo = mid;
    else hi = mid - 1;
  }
  return `${text.slice(0, lo)}…`;
}

/** Where the parallel coordinates' axes and their titles go. */
export interface ParallelLayout {
  /** Each axis's x. */
  xs: number[];
  /** Each title's row: 0, or 1 (below it) when neighbouring titles alternate rows. */
  rows: number[];
  /** Each title as shown: whole, or cut with "…" when even alternate rows cannot hold it. */
  titles: string[];
}

/** The axes of a plot `width` px wide, spread evenly, with room at the edges for the first and
 * last titles (centred on their axes) and for `edges` px of the first axis's labels to its left
 * and the last one's to its right: a title is no longer cut by the plot's edge (the last one
 * read "hparam/final_accur"). Titles too wide for the space between axes take alternate rows,
 * and past twice that space they are cut. `measure`: a title's width in px. */
export function parallelLayout(titles: readonly string[], width: number, measure: (text: string) => number, edges: readonly [number, number] = [0, 0]): ParallelLayout {
  const n = titles.length;
  if (n === 0) return { xs: [], rows: [], titles: [] };
  if (n === 1) return { xs: [width / 2], rows: [0], titles: [fitText(titles[0], width - 2 * PLOT_EDGE, measure)] };
  let shown = [...titles];
  let widths = shown.map(measure);
  const place = (): number[] => {
    const left = PLOT_EDGE + Math.max(widths[0] / 2, edges[0]);
    const right = width - PLOT_EDGE - Math.max(widths[n - 1] / 2, edges[1]);
    return shown.map((_, i) => left + (i * (right - left)) / (n - 1));
  };
  let xs = place();
  const fits = (apart: number): boolean => {
    for (let i = 0; i + apart < n; i++) {
      if ((widths[i] + widths[i + apart]) / 2 + TITLE_GAP > xs[i + apart] - xs[i]) return false;
    }
    return true;
  };
  if (fits(1)) return { xs, rows: shown.map(() => 0), titles: shown };
  const rows = shown.map((_, i) => i % 2);
  if (!fits(2)) {
    // Cut to what two spaces between axes hold as the whole titles leave them: cut titles
    // leave the edges more room, so the spaces only widen.
    const room = Math.max(2 * TITLE_GAP, 2 * (xs[1] - xs[0]) - TITLE_GAP);
    shown = shown.map((t) => fitText(t, room, measure));
    widths = shown.map(measure);
    xs = place();
  }
  return { xs, rows, titles: shown };
}
