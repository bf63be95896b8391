// Pure parts of the hparams view: the table's rows and columns from the hparams API's
// answers, sorting, filtering, and the parallel-coordinates axes.

export type Cell = number | string | boolean | null;

export interface Column {
  /** hparam name, or metric "group/tag" ("tag" when its group is empty), or "status", or
   * "trial" (the session's group). */
  key: string;
  label: string;
  kind: "trial" | "hparam" | "metric" | "status";
  /** Every value is a number (or missing). */
  numeric: boolean;
}

export interface Row {
  /** The session's name: its run. */
  session: string;
  group: string;
  status: string;
  values: Record<string, Cell>;
}

interface MetricName {
  group?: string;
  tag?: string;
}
interface HparamInfo {
  name: string;
  displayName?: string;
  type?: string;
}
export interface HparamsExperiment {
  hparamInfos?: HparamInfo[];
  metricInfos?: { name: MetricName; displayName?: string }[];
}
export interface SessionGroups {
  sessionGroups?: {
    name: string;
    hparams?: Record<string, Cell>;
    sessions?: {
      name: string;
      status?: string;
      metricValues?: { name: MetricName; value?: number | string }[];
    }[];
  }[];
  totalSize?: number;
}

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

/** A row per session (a session is a run), with its group's hparams and its own metrics.
 * The group is TensorBoard's trial (`hp.hparams(..., trial_id=)`, Keras's
 * `hp.KerasCallback(trial_id=)`; a hash of the hparams when none was given): a "trial" column
 * comes first when some session's group is not named as the session is, so that the sessions
 * of a trial (repeats of one configuration) can be told, sorted and filtered together.
 * Each session keeps its own metrics (TensorBoard's table shows a trial's mean instead). */
export function tableOf(experiment: HparamsExperiment, groups: SessionGroups): { columns: Column[]; rows: Row[] } {
  // The trial column's key: "trial", unless an hparam or a metric has that name.
  const taken = new Set([...(experiment.hparamInfos ?? []).map((h) => h.name), ...(experiment.metricInfos ?? []).map((m) => metricKey(m.name))]);
  const trialKey = ["trial", "trial id", "trial (group)"].find((k) => !taken.has(k)) ?? "\u0000trial";
  const rows: Row[] = [];
  for (const group of groups.sessionGroups ?? []) {
    for (const session of group.sessions ?? []) {
      const values: Record<string, Cell> = {};
      for (const [name, v] of Object.entries(group.hparams ?? {})) values[name] = asCell(v);
      for (const m of session.metricValues ?? []) values[metricKey(m.name)] = asCell(m.value);
      const status = STATUS_WORDS[session.status ?? ""] ?? "unknown";
      values.status = status;
      values[trialKey] = group.name;
      rows.push({ session: session.name, group: group.name, status, values });
    }
  }
  const columns: Column[] = [];
  if (rows.some((r) => r.group !== r.session)) columns.push({ key: trialKey, label: "trial", kind: "trial", numeric: false });
  const numeric = (key: string): boolean =>
    rows.every((r) => r.values[key] === null || r.values[key] === undefined || typeof r.values[key] === "number");
  for (const h of experiment.hparamInfos ?? []) {
    columns.push({ key: h.name, label: h.displayName || h.name, kind: "hparam", numeric: numeric(h.name) });
  }
  for (const m of experiment.metricInfos ?? []) {
    const key = metricKey(m.name);
    columns.push({ key, label: m.displayName || key, kind: "metric", numeric: numeric(key) });
  }
  columns.push({ key: "status", label: "status", kind: "status", numeric: false });
  return { columns, rows };
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

/** The rows sorted by a column (missing values last in both directions; the session name
 * breaks ties), a new array. */
export function sortRows(rows: readonly Row[], key: string, descending: boolean): Row[] {
  return [...rows].sort((x, y) => {
    const a = key === "session" ? x.session : x.values[key];
    const b = key === "session" ? y.session : y.values[key];
    const missA = a === null || a === undefined;
    const missB = b === null || b === undefined;
    if (missA !== missB) return missA ? 1 : -1;
    const c = compareCells(a, b);
    if (c !== 0) return descending ? -c : c;
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
 * filters the session name). */
export function filterRows(rows: readonly Row[], columns: readonly Column[], filters: Record<string, string>): Row[] {
  const tests: [string, (v: Cell | undefined) => boolean][] = [];
  for (const [key, text] of Object.entries(filters)) {
    if (!text.trim()) continue;
    const column = columns.find((c) => c.key === key);
    tests.push([key, parseFilter(text, column?.numeric ?? false)]);
  }
  return rows.filter((r) => tests.every(([key, test]) => test(key === "session" ? r.session : r.values[key])));
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
