import { describe, expect, it } from "vitest";

import { asBuckets, bandPairs, type Bucket, type DistributionAnswer, distributionColumns, niceTicks, num, rebin, valueRange } from "../src/views/histmath";

describe("num", () => {
  it("reads TensorBoard's spellings of non-finite values", () => {
    expect(num(1.5)).toBe(1.5);
    expect(num("Infinity")).toBe(Infinity);
    expect(num("-Infinity")).toBe(-Infinity);
    expect(num("NaN")).toBeNaN();
    expect(num(null)).toBeNaN();
  });
});

describe("asBuckets", () => {
  it("reads a histograms tensor's [k, 3] values, non-finite ones spelled", () => {
    const values: unknown = [[-1, 0, 3], ["-Infinity", -5, 1]];
    expect(asBuckets(values)).toEqual(values);
    expect(asBuckets([])).toEqual([]);
  });
  it("refuses anything else a tensor's values may be", () => {
    expect(asBuckets({ error: "cannot decode DT_STRING" })).toBeNull();
    expect(asBuckets(1.5)).toBeNull();
    expect(asBuckets([1, 2, 3])).toBeNull();
    expect(asBuckets([[1, 2]])).toBeNull();
    expect(asBuckets([[1, 2, true]])).toBeNull();
  });
});

describe("valueRange", () => {
  it("covers every finite edge of every histogram", () => {
    const a: Bucket[] = [[-1, 0, 3], [0, 2, 1]];
    const b: Bucket[] = [["-Infinity", -5, 1], [4, 7, 2]];
    expect(valueRange([a, b])).toEqual([-1, 7]);
  });
  it("widens a single value and has none without buckets", () => {
    expect(valueRange([[[3, 3, 10]]])).toEqual([2.5, 3.5]);
    expect(valueRange([[], []])).toBeNull();
  });
});

describe("rebin", () => {
  it("keeps the total count and splits a bucket by overlap", () => {
    // One bucket [0, 4) of 8 over 4 bins of [0, 4): 2 each.
    expect([...rebin([[0, 4, 8]], 0, 4, 4)]).toEqual([2, 2, 2, 2]);
    // [1, 2) of 6 on 2 bins of [0, 4): all in the first bin.
    expect([...rebin([[1, 2, 6]], 0, 4, 2)]).toEqual([6, 0]);
    // [1.5, 2.5) of 10 straddles the middle: half each side.
    expect([...rebin([[1.5, 2.5, 10]], 0, 4, 2)]).toEqual([5, 5]);
    const many: Bucket[] = [[-3, -1, 4], [-1, 0.3, 7], [0.3, 5, 2.5]];
    const bins = rebin(many, -3, 5, 7);
    expect(bins.reduce((s, c) => s + c, 0)).toBeCloseTo(13.5, 10);
  });
  it("puts a zero-width bucket in the bin holding it, the top edge in the last bin", () => {
    expect([...rebin([[1, 1, 3], [4, 4, 2]], 0, 4, 4)]).toEqual([0, 3, 0, 2]);
  });
  it("skips non-finite buckets and counts", () => {
    expect([...rebin([["-Infinity", 0, 3], [0, 1, "NaN"], [0, 2, 2]], 0, 2, 2)]).toEqual([1, 1]);
  });
});

describe("distributionColumns", () => {
  it("turns /api/v1/distributions' answer into uPlot columns", () => {
    const step = (wall_time: number, s: number, values: [number, number | "NaN"][]): DistributionAnswer[number] => ({
      step: s,
      wall_time,
      percentiles: values.map(([basis_point, value]) => ({ basis_point, value })),
    });
    const answer: DistributionAnswer = [
      step(100, 0, [[0, -2], [5000, 0], [10000, 2]]),
      step(101, 10, [[0, -3], [5000, "NaN"], [10000, 3]]),
    ];
    const { basisPoints, columns } = distributionColumns(answer);
    expect(basisPoints).toEqual([0, 5000, 10000]);
    expect(columns).toEqual([
      [0, 10],
      [-2, -3],
      [0, null],
      [2, 3],
    ]);
  });
  it("is empty without steps", () => {
    expect(distributionColumns([])).toEqual({ basisPoints: [], columns: [[]] });
  });
});

describe("bandPairs", () => {
  it("pairs the outermost columns first (uPlot's 1-based series)", () => {
    expect(bandPairs(9)).toEqual([[9, 1], [8, 2], [7, 3], [6, 4]]);
    expect(bandPairs(1)).toEqual([]);
  });
});

describe("niceTicks", () => {
  it("ticks round values, 0 among them, not the range split evenly", () => {
    expect(niceTicks(-0.069, 0.0907, 5)).toEqual({ ticks: [-0.05, 0, 0.05], step: 0.05 });
    expect(niceTicks(-3.55, 5.5, 5)).toEqual({ ticks: [-2, 0, 2, 4], step: 2 });
    expect(niceTicks(0, 100, 5)).toEqual({ ticks: [0, 50, 100], step: 50 });
  });
  it("keeps at most `most` ticks", () => {
    for (const [lo, hi] of [[-1e9, 3e9], [0.001, 0.0013], [-7, 7], [1e-8, 9e-8]]) {
      const { ticks } = niceTicks(lo, hi, 5);
      expect(ticks.length).toBeLessThanOrEqual(5);
      expect(ticks.length).toBeGreaterThanOrEqual(2);
      expect(ticks.every((v) => v >= lo && v <= hi)).toBe(true);
    }
  });
  it("falls back to the ends for a range holding no round value", () => {
    expect(niceTicks(1.21, 1.29, 1)).toEqual({ ticks: [1.21, 1.29], step: 1.29 - 1.21 });
    expect(niceTicks(2, 2, 5)).toEqual({ ticks: [2], step: 1 });
  });
});
