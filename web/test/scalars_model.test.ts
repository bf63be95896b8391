import uPlot from "uplot";
import { describe, expect, it } from "vitest";
import { Series } from "../src/series";
import { alignTables, formatValue, prepareCard, stepRange, type Table, valuesAt, windowIndices } from "../src/views/scalars_model";

function series(steps: number[], values: number[], wall0 = 1000): Series {
  return Series.from({ step: steps, wall_time: steps.map((s) => wall0 + s), value: values });
}

const base = { smoothing: 0, x: "step" as const, logY: false, width: 100, range: null };

describe("a card's model", () => {
  const data = new Map([
    ["a", series([0, 1, 2, 3], [1, 2, 3, 4])],
    ["b", series([0, 2, 5], [5, -1, 0.5])],
  ]);

  it("counts the points drawn, the last step and last values of the runs shown", () => {
    const m = prepareCard(data, ["a", "b", "missing"], base);
    expect(m.drawn).toEqual(["a", "b"]);
    expect(m.points).toBe(7);
    expect(m.lastStep).toBe(5);
    expect(m.lastValue).toEqual({ a: 4, b: 0.5 });
    expect(prepareCard(data, ["a"], base).lastStep).toBe(3);
  });

  it("leaves out what a log scale cannot show", () => {
    const m = prepareCard(data, ["b"], { ...base, logY: true });
    expect(m.traces[0].raw).toEqual([5, null, 0.5]);
  });

  it("smooths the whole series, then keeps the window's points", () => {
    const m = prepareCard(data, ["a"], { ...base, smoothing: 0.5, range: [1.5, 2.5] });
    // The window's points and one neighbour each side.
    expect(m.traces[0].xs).toEqual([1, 2, 3]);
    expect(m.points).toBe(3);
    expect(m.traces[0].smoothed![0]).toBeCloseTo(prepareCard(data, ["a"], { ...base, smoothing: 0.5 }).traces[0].smoothed![1]!);
    expect(m.lastValue.a).not.toBe(4);
  });

  it("keeps a spike of a long series at any width", () => {
    const steps = Array.from({ length: 100_000 }, (_, i) => i);
    const values = steps.map((i) => (i === 77_777 ? 1000 : Math.sin(i)));
    const m = prepareCard(new Map([["r", series(steps, values)]]), ["r"], { ...base, width: 50 });
    expect(m.points).toBeLessThanOrEqual(200);
    expect(m.traces[0].raw).toContain(1000);
  });
});

describe("window and tooltip lookups", () => {
  it("finds the window's indices with a neighbour each side", () => {
    expect(windowIndices([0, 10, 20, 30, 40], [10, 30])).toEqual([0, 5]);
    expect(windowIndices([0, 10, 20, 30, 40], [11, 19])).toEqual([1, 3]);
    expect(windowIndices([0, 10, 20], null)).toEqual([0, 3]);
    expect(windowIndices([0, 10, 20], [50, 60])).toEqual([2, 3]);
  });

  it("gives each run's point nearest the pointer", () => {
    const data = new Map([
      ["a", series([0, 10, 20], [1, 2, 3])],
      ["b", series([0, 4, 8, 12], [7, 8, 9, 10])],
    ]);
    const m = prepareCard(data, ["a", "b"], base);
    const rows = valuesAt(m, 11);
    expect(rows.map((r) => [r.run, r.step, r.value])).toEqual([
      ["a", 10, 2],
      ["b", 12, 10],
    ]);
    expect(valuesAt(m, -5).map((r) => r.step)).toEqual([0, 0]);
    expect(valuesAt(m, 99).map((r) => r.step)).toEqual([20, 12]);
  });

  it("maps a wall-time window onto the steps to fetch", () => {
    const s = series([0, 10, 20, 30], [1, 2, 3, 4], 100);
    expect(stepRange([s], "wall", [112, 125])).toEqual([10, 30]);
    expect(stepRange([s], "step", [1.5, 7.2])).toEqual([1, 8]);
    expect(stepRange([], "wall", [0, 1])).toBeNull();
  });

  it("formats values for reading", () => {
    expect(formatValue(0.123456)).toBe("0.1235");
    expect(formatValue(1234567)).toBe("1.235e+6");
    expect(formatValue(NaN)).toBe("NaN");
    expect(formatValue(-Infinity)).toBe("−∞");
  });
});

describe("alignTables", () => {
  it("gives uPlot.join's aligned data: the union of the xs, gaps undefined, nulls kept", () => {
    const tables: Table[] = [
      [[0, 2, 4], [1, null, 3], [10, 20, 30]],
      [[1, 2, 5], [7, 8, 9]],
      [[], []],
    ];
    const expected = [[0, 1, 2, 4, 5], [1, undefined, null, 3, undefined], [10, undefined, 20, 30, undefined], [undefined, 7, 8, undefined, 9], [undefined, undefined, undefined, undefined, undefined]];
    expect(alignTables(tables)).toEqual(expected);
    expect(alignTables(tables)).toEqual(uPlot.join(tables as uPlot.AlignedData[]));
  });

  it("copies tables that share their xs, and answers [[]] for none", () => {
    const xs = [1, 2, 3];
    const tables: Table[] = [
      [xs, [1, 2, 3]],
      [[1, 2, 3], [4, null, 6]],
    ];
    expect(alignTables(tables)).toEqual([[1, 2, 3], [1, 2, 3], [4, null, 6]]);
    expect(alignTables(tables)[0]).not.toBe(xs);
    expect(alignTables([])).toEqual([[]]);
  });
});
