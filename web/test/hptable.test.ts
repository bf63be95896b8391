import { describe, expect, it } from "vitest";

import type { Schemas } from "../src/api_types";
import {
  axisOf,
  compareCells,
  filterRows,
  fitText,
  hasRepeatedTrials,
  type HparamsExperiment,
  metricKey,
  PLOT_EDGE,
  parallelLayout,
  parseFilter,
  type Row,
  type SessionGroups,
  sortRows,
  tableOf,
  TITLE_GAP,
  trialStatus,
} from "../src/views/hptable";

// The answers of /api/v1/hparams/experiment and /session_groups (proto3 JSON, typed by the
// OpenAPI document), built from what each test sets; the rest as the API prints defaults.
type Group = SessionGroups["sessionGroups"][number];
type Session = Group["sessions"][number];
type HparamInfo = Schemas["HParamInfo"];

function metric(name: Schemas["MetricName"], value: Schemas["FloatOrText"]): Schemas["MetricValue"] {
  return { name, value, trainingStep: 1, wallTimeSecs: 0 };
}
function session(name: string, fields: Partial<Session> = {}): Session {
  return { name, status: "STATUS_UNKNOWN", metricValues: [], ...fields };
}
function group(name: string, fields: Partial<Group> = {}): Group {
  return { name, hparams: {}, metricValues: [], sessions: [], ...fields };
}
function groupsOf(...list: Group[]): SessionGroups {
  return { sessionGroups: list, totalSize: list.length };
}
function hparam(name: string, fields: Partial<HparamInfo> = {}): HparamInfo {
  return { name, type: "DATA_TYPE_UNSET", ...fields };
}
function experimentOf(hparamInfos: HparamInfo[], metrics: HparamsExperiment["metricInfos"]): HparamsExperiment {
  return { hparamInfos, metricInfos: metrics };
}

const experiment = experimentOf(
  [hparam("lr", { displayName: "learning rate", type: "DATA_TYPE_FLOAT64" }), hparam("optimizer", { type: "DATA_TYPE_STRING" })],
  [{ name: { group: "validation", tag: "loss" } }, { name: { group: "", tag: "score" }, displayName: "Score" }],
);
const groups = groupsOf(
  group("a", {
    hparams: { lr: 0.1, optimizer: "sgd" },
    sessions: [
      session("a/0", { status: "STATUS_SUCCESS", metricValues: [metric({ group: "validation", tag: "loss" }, 0.5)] }),
      session("a/1", { status: "STATUS_FAILURE", metricValues: [metric({ group: "validation", tag: "loss" }, "NaN")] }),
    ],
  }),
  group("b", {
    hparams: { lr: 0.001, optimizer: "adam" },
    sessions: [session("b/0", { status: "STATUS_RUNNING", metricValues: [metric({ tag: "score" }, 3)] })],
  }),
);

describe("tableOf", () => {
  it("makes a row per session with its group's hparams and its own metrics", () => {
    const { columns, rows } = tableOf(experiment, groups);
    expect(columns.map((c) => [c.key, c.label, c.kind, c.numeric])).toEqual([
      ["trial", "trial", "trial", false],
      ["lr", "learning rate", "hparam", true],
      ["optimizer", "optimizer", "hparam", false],
      ["validation/loss", "validation/loss", "metric", true],
      ["score", "Score", "metric", true],
      ["status", "status", "status", false],
    ]);
    expect(rows.map((r) => [r.session, r.group, r.status])).toEqual([
      ["a/0", "a", "success"],
      ["a/1", "a", "failure"],
      ["b/0", "b", "running"],
    ]);
    expect(rows[0].values).toEqual({ lr: 0.1, optimizer: "sgd", "validation/loss": 0.5, status: "success", trial: "a" });
    expect(rows[1].values["validation/loss"]).toBeNaN();
    expect(rows[2].values["validation/loss"]).toBeUndefined();
  });
  it("has a trial column only when some session's group is named apart from it", () => {
    // PyTorch's add_hparams: a group per session, named as the session is.
    const own = groupsOf(
      group("r/1", { hparams: { lr: 0.1 }, sessions: [session("r/1")] }),
      group("r/2", { hparams: { lr: 0.2 }, sessions: [session("r/2")] }),
    );
    expect(tableOf(experiment, own).columns.map((c) => c.key)).not.toContain("trial");
    // Keras's trial IDs: two runs of one trial sort and filter together.
    const keras = groupsOf(
      group("trial-1", { hparams: { lr: 0.1 }, sessions: [session("run-1")] }),
      group("manual", { hparams: { lr: 0.2 }, sessions: [session("m-0"), session("m-1")] }),
    );
    const { columns, rows } = tableOf(experiment, keras);
    expect(columns[0].key).toBe("trial");
    expect(sortRows(rows, "trial", false).map((r) => [r.values.trial, r.session])).toEqual([
      ["manual", "m-0"],
      ["manual", "m-1"],
      ["trial-1", "run-1"],
    ]);
    expect(filterRows(rows, columns, { trial: "^man" }).map((r) => r.session)).toEqual(["m-0", "m-1"]);
  });
  it("keys the trial column apart from an hparam named trial", () => {
    const named = experimentOf([hparam("trial")], []);
    const { columns, rows } = tableOf(named, groupsOf(group("t-1", { hparams: { trial: 7 }, sessions: [session("run-1")] })));
    expect(columns.map((c) => [c.key, c.kind])).toEqual([
      ["trial id", "trial"],
      ["trial", "hparam"],
      ["status", "status"],
    ]);
    expect(rows[0].values).toMatchObject({ trial: 7, "trial id": "t-1" });
  });
  it("makes a row per trial with the group's metrics (the API's mean), its count and statuses", () => {
    const withMeans = groupsOf(
      { ...groups.sessionGroups[0], metricValues: [metric({ group: "validation", tag: "loss" }, 0.75)] },
      { ...groups.sessionGroups[1], metricValues: [metric({ group: "", tag: "score" }, 3)] },
      group("empty", { hparams: { lr: 1 } }),
    );
    const { columns, rows } = tableOf(experiment, withMeans, "trials");
    expect(columns.map((c) => [c.key, c.kind, c.numeric])).toEqual([
      ["sessions", "sessions", true],
      ["lr", "hparam", true],
      ["optimizer", "hparam", false],
      ["validation/loss", "metric", true],
      ["score", "metric", true],
      ["status", "status", false],
    ]);
    // A group without sessions has no row; a row's runs are its sessions'.
    expect(rows.map((r) => [r.session, r.group, r.status, r.runs])).toEqual([
      ["a", "a", "mixed", ["a/0", "a/1"]],
      ["b", "b", "running", ["b/0"]],
    ]);
    expect(rows[0].values).toEqual({ lr: 0.1, optimizer: "sgd", "validation/loss": 0.75, status: "1 failure, 1 success", sessions: 2 });
    expect(rows[1].values).toEqual({ lr: 0.001, optimizer: "adam", score: 3, status: "running", sessions: 1 });
    expect(sortRows(rows, "sessions", true).map((r) => r.session)).toEqual(["a", "b"]);
  });
  it("keys the sessions column apart from a metric named sessions", () => {
    const named = experimentOf([], [{ name: { tag: "sessions" } }]);
    const one = groupsOf(group("g", { metricValues: [metric({ tag: "sessions" }, 9)], sessions: [session("r")] }));
    const { columns, rows } = tableOf(named, one, "trials");
    expect(columns.map((c) => [c.key, c.kind])).toEqual([
      ["session count", "sessions"],
      ["sessions", "metric"],
      ["status", "status"],
    ]);
    expect(rows[0].values).toMatchObject({ sessions: 9, "session count": 1 });
  });
  it("offers trial rows only when a trial repeats", () => {
    expect(hasRepeatedTrials(groups)).toBe(true);
    expect(hasRepeatedTrials(groupsOf(group("x", { sessions: [session("x")] })))).toBe(false);
    expect(hasRepeatedTrials(groupsOf())).toBe(false);
  });
  it("names a trial's status by its sessions'", () => {
    expect(trialStatus(["success", "success"])).toBe("success");
    expect(trialStatus(["running", "success", "success"])).toBe("2 success, 1 running");
    expect(trialStatus([])).toBe("unknown");
  });
  it("names a metric by group/tag, or its tag alone", () => {
    expect(metricKey({ group: "train", tag: "loss" })).toBe("train/loss");
    expect(metricKey({ tag: "score" })).toBe("score");
  });
  it("keeps a declared metric without a name as a column keyed \"\"", () => {
    const nameless = experimentOf([], [{ displayName: "unnamed" }]);
    const { columns } = tableOf(nameless, groupsOf(group("a", { sessions: [session("a")] })));
    expect(columns.filter((c) => c.kind === "metric").map((c) => [c.key, c.label])).toEqual([["", "unnamed"]]);
  });
});

function rowsOf(values: Record<string, number | string | null>[]): Row[] {
  return values.map((v, i) => ({ session: `s${i}`, name: `s${i}`, group: `g${i}`, status: "success", values: v, runs: [`s${i}`], color: `s${i}` }));
}

describe("sortRows", () => {
  const rows = rowsOf([{ x: 3 }, { x: null }, { x: 1 }, { x: NaN }, { x: 2 }]);
  it("sorts ascending and descending with missing values last either way", () => {
    expect(sortRows(rows, "x", false).map((r) => r.values.x)).toEqual([1, 2, 3, NaN, null]);
    expect(sortRows(rows, "x", true).map((r) => r.values.x)).toEqual([NaN, 3, 2, 1, null]);
  });
  it("breaks ties by session name, and sorts by session", () => {
    const tied = rowsOf([{ x: 1 }, { x: 1 }, { x: 0 }]);
    expect(sortRows(tied, "x", true).map((r) => r.session)).toEqual(["s0", "s1", "s2"]);
    expect(sortRows(tied, "session", true).map((r) => r.session)).toEqual(["s2", "s1", "s0"]);
  });
  it("orders numbers before booleans before strings", () => {
    expect(compareCells(1, true)).toBeLessThan(0);
    expect(compareCells(false, "a")).toBeLessThan(0);
    expect(compareCells("b", "a")).toBeGreaterThan(0);
  });
});

describe("parseFilter", () => {
  it("takes MIN..MAX (open ends) or a number for numeric columns", () => {
    const f = parseFilter("0.01..0.1", true);
    expect([0.001, 0.01, 0.05, 0.1, 0.2].map(f)).toEqual([false, true, true, true, false]);
    expect([1, 5].map(parseFilter("..2", true))).toEqual([true, false]);
    expect([1, 5].map(parseFilter("2..", true))).toEqual([false, true]);
    expect([1, 2].map(parseFilter("2", true))).toEqual([false, true]);
  });
  it("takes a case-insensitive partial regex for text, plain text if it does not compile", () => {
    expect(["adam", "SGD", "rmsprop"].map(parseFilter("^(adam|sgd)$", false))).toEqual([true, true, false]);
    expect(["a(b", "ab"].map(parseFilter("a(", false))).toEqual([true, false]);
  });
  it("keeps everything when empty and never a missing value otherwise", () => {
    expect(parseFilter("  ", true)(null)).toBe(true);
    expect(parseFilter("..", true)(null)).toBe(false);
    expect(parseFilter("x", false)(undefined)).toBe(false);
  });
});

describe("filterRows", () => {
  it("applies every column's filter, and the session filter to names", () => {
    const { columns, rows } = tableOf(experiment, groups);
    expect(filterRows(rows, columns, { optimizer: "sgd" }).map((r) => r.session)).toEqual(["a/0", "a/1"]);
    expect(filterRows(rows, columns, { lr: "..0.01", session: "b" }).map((r) => r.session)).toEqual(["b/0"]);
    expect(filterRows(rows, columns, { "validation/loss": "0..1" }).map((r) => r.session)).toEqual(["a/0"]);
  });
});

describe("axisOf", () => {
  it("maps numbers linearly, or on a log scale over several decades", () => {
    const lin = axisOf({ key: "x", label: "x", kind: "hparam", numeric: true }, rowsOf([{ x: 1 }, { x: 3 }]));
    expect([1, 2, 3, null].map((v) => lin.position(v))).toEqual([0, 0.5, 1, null]);
    const log = axisOf({ key: "x", label: "x", kind: "hparam", numeric: true }, rowsOf([{ x: 0.001 }, { x: 0.1 }]));
    expect(log.position(0.01)).toBeCloseTo(0.5, 10);
  });
  it("spreads text values evenly in sorted order", () => {
    const axis = axisOf({ key: "o", label: "o", kind: "hparam", numeric: false }, rowsOf([{ o: "sgd" }, { o: "adam" }, { o: "rmsprop" }]));
    expect(["adam", "rmsprop", "sgd", "other"].map((v) => axis.position(v))).toEqual([0, 0.5, 1, null]);
    expect(axis.ticks.map(([, t]) => t)).toEqual(["adam", "rmsprop", "sgd"]);
  });
});

describe("add_hparams' sessions", () => {
  // tensorboardX's add_hparams: a session per call in a timestamped sub-run of the writer's
  // run, its group named after it; boardd's API names the run the user named.
  const tbx = groupsOf(
    group("lr0.01_bs128_sgd/1796660406.1974096", {
      displayName: "lr0.01_bs128_sgd",
      hparams: { lr: 0.01 },
      sessions: [session("lr0.01_bs128_sgd/1796660406.1974096", { run: "lr0.01_bs128_sgd", status: "STATUS_SUCCESS", metricValues: [metric({ tag: "hparam/acc" }, 0.9)] })],
    }),
    group("lr0.1_bs32_sgd/1796660407.5", {
      displayName: "lr0.1_bs32_sgd",
      hparams: { lr: 0.1 },
      sessions: [session("lr0.1_bs32_sgd/1796660407.5", { run: "lr0.1_bs32_sgd", status: "STATUS_SUCCESS", metricValues: [metric({ tag: "hparam/acc" }, 0.8)] })],
    }),
  );
  const exp = experimentOf([hparam("lr")], [{ name: { tag: "hparam/acc" } }]);

  it("show as the run the user named, in its colour, the sub-run kept as the session", () => {
    const { columns, rows } = tableOf(exp, tbx);
    expect(rows.map((r) => [r.name, r.color, r.session])).toEqual([
      ["lr0.01_bs128_sgd", "lr0.01_bs128_sgd", "lr0.01_bs128_sgd/1796660406.1974096"],
      ["lr0.1_bs32_sgd", "lr0.1_bs32_sgd", "lr0.1_bs32_sgd/1796660407.5"],
    ]);
    // Each session its own trial, named as it: no trial column.
    expect(columns.map((c) => c.key)).toEqual(["lr", "hparam/acc", "status"]);
    // Sorted and filtered by the name shown.
    expect(sortRows(rows, "session", true).map((r) => r.name)).toEqual(["lr0.1_bs32_sgd", "lr0.01_bs128_sgd"]);
    expect(filterRows(rows, columns, { session: "^lr0\\.1_" }).map((r) => r.name)).toEqual(["lr0.1_bs32_sgd"]);
    expect(filterRows(rows, columns, { session: "1796660406" })).toEqual([]);
    const trials = tableOf(exp, tbx, "trials").rows;
    expect(trials.map((r) => [r.name, r.color, r.runs])).toEqual([
      ["lr0.01_bs128_sgd", "lr0.01_bs128_sgd", ["lr0.01_bs128_sgd/1796660406.1974096"]],
      ["lr0.1_bs32_sgd", "lr0.1_bs32_sgd", ["lr0.1_bs32_sgd/1796660407.5"]],
    ]);
  });

  it("keep their own names without boardd's (TensorBoard's answer)", () => {
    const plain = groupsOf(...groups.sessionGroups);
    const { rows } = tableOf(experiment, plain);
    expect(rows.map((r) => [r.name, r.color])).toEqual(rows.map((r) => [r.session, r.session]));
  });
});

describe("the parallel coordinates' layout", () => {
  // 6.5 px a character, as an 11 px bold font about.
  const measure = (t: string): number => 6.5 * [...t].length;
  const check = (titles: string[], width: number, edges: [number, number] = [0, 0]): ReturnType<typeof parallelLayout> => {
    const layout = parallelLayout(titles, width, measure, edges);
    const { xs, rows } = layout;
    layout.titles.forEach((t, i) => {
      // Inside the plot, and the edge axes' labels too.
      expect(xs[i] - measure(t) / 2, `${t} at ${xs[i]}`).toBeGreaterThanOrEqual(PLOT_EDGE - 1e-9);
      expect(xs[i] + measure(t) / 2, `${t} at ${xs[i]}`).toBeLessThanOrEqual(width - PLOT_EDGE + 1e-9);
      expect(t === titles[i] || t.endsWith("…")).toBe(true);
      // No two titles of a row overlap.
      for (let j = i + 1; j < titles.length; j++) {
        if (rows[j] !== rows[i]) continue;
        expect(xs[j] - xs[i], `${t} and ${layout.titles[j]}`).toBeGreaterThanOrEqual((measure(t) + measure(layout.titles[j])) / 2 + TITLE_GAP - 1e-9);
      }
    });
    expect(xs[0]).toBeGreaterThanOrEqual(PLOT_EDGE + edges[0] - 1e-9);
    expect(xs[xs.length - 1]).toBeLessThanOrEqual(width - PLOT_EDGE - edges[1] + 1e-9);
    return layout;
  };

  it("leaves room at the edges for the first and last titles: the last is whole", () => {
    const titles = ["bs", "lr", "opt", "hparam/best_loss", "hparam/final_accuracy"];
    const layout = check(titles, 1350);
    expect(layout.titles).toEqual(titles);
    expect(layout.rows).toEqual([0, 0, 0, 0, 0]);
    // The last title was centred 60 px from the edge, half of it (68 px) past it.
    expect(layout.xs[4] + measure("hparam/final_accuracy") / 2).toBeLessThanOrEqual(1350 - PLOT_EDGE);
    // The labels' room beside the edge axes.
    const roomy = check(titles, 1350, [30, 120]);
    expect(roomy.xs[4]).toBeLessThanOrEqual(1350 - PLOT_EDGE - 120);
  });

  it("alternates rows when neighbouring titles would overlap, and cuts them past that", () => {
    const long = ["validation/accuracy", "validation/loss", "train/accuracy", "train/loss", "learning_rate", "weight_decay"];
    const two = check(long, 600);
    expect(two.rows).toEqual([0, 1, 0, 1, 0, 1]);
    expect(two.titles).toEqual(long);
    const cut = check([...long, ...long.map((t) => `${t}_2`)], 600);
    expect(cut.titles.some((t) => t.endsWith("…"))).toBe(true);
    expect(cut.rows).toEqual(cut.titles.map((_, i) => i % 2));
  });

  it("centres a single axis, its title cut to the plot", () => {
    expect(check(["score"], 600).xs).toEqual([300]);
    expect(parallelLayout(["x".repeat(200)], 600, measure).titles[0].endsWith("…")).toBe(true);
    expect(parallelLayout([], 600, measure)).toEqual({ xs: [], rows: [], titles: [] });
  });

  it("cuts text to a width with an ellipsis", () => {
    expect(fitText("hparam/final_accuracy", 1000, measure)).toBe("hparam/final_accuracy");
    const cut = fitText("hparam/final_accuracy", 65, measure);
    expect(cut).toBe("hparam/fi…");
    expect(measure(cut)).toBeLessThanOrEqual(65);
    expect(fitText("abc", 1, measure)).toBe("…");
  });
});
