import { describe, expect, it } from "vitest";

import { logSplits } from "../src/views/axes";
import { logTickLabels, tickLabels } from "../src/views/ticks";

describe("tick labels", () => {
  it("leaves ordinary magnitudes to uPlot", () => {
    expect(tickLabels([0, 2000, 4000, 6000], 2000)).toBeNull();
    expect(tickLabels([0, 0.25, 0.5], 0.25)).toBeNull();
    expect(tickLabels([0, 0], 1)).toBeNull();
    expect(tickLabels([], 1)).toBeNull();
  });

  it("writes large ticks with an SI prefix each, as d3's ~s does", () => {
    expect(tickLabels([0, 2e11, 4e11, 6e11, 8e11, 1e12], 2e11)).toEqual(["0", "200G", "400G", "600G", "800G", "1T"]);
    expect(tickLabels([1.1e12, 1.2e12, 1.3e12], 1e11)).toEqual(["1.1T", "1.2T", "1.3T"]);
    expect(tickLabels([0, 50000, 100000, 150000], 50000)).toEqual(["0", "50k", "100k", "150k"]);
    expect(tickLabels([100000, 100500, 101000], 500)).toEqual(["100k", "100.5k", "101k"]);
    expect(tickLabels([-3e6, 0, 3e6], 3e6)).toEqual(["-3M", "0", "3M"]);
    expect(tickLabels([0, 2.5e11, 5e11, 7.5e11, 1e12], 2.5e11)).toEqual(["0", "250G", "500G", "750G", "1T"]);
  });

  it("writes ticks finer than uPlot's 3 decimals with the decimals they need", () => {
    // Before: uPlot's "0.001, 0.001, 0.001, 0, 0" for a learning rate decaying from 1e-3.
    expect(tickLabels([0, 0.0002, 0.0004, 0.0006, 0.0008, 0.001], 0.0002)).toEqual(["0", "0.0002", "0.0004", "0.0006", "0.0008", "0.001"]);
    expect(tickLabels([0.95, 0.9502, 0.9504, 0.9506], 0.0002)).toEqual(["0.95", "0.9502", "0.9504", "0.9506"]);
    expect(tickLabels([0.0185, 0.019, 0.0195], 0.0005)).toEqual(["0.0185", "0.019", "0.0195"]);
    expect(tickLabels([-0.0005, 0, 0.0005], 0.0005)).toEqual(["-0.0005", "0", "0.0005"]);
  });

  it("writes ticks past the largest prefix with an exponent", () => {
    // Before: "20000000000000E" for 2e31.
    expect(tickLabels([0, 1e31, 2e31, 3e31], 1e31)).toEqual(["0", "1e31", "2e31", "3e31"]);
    expect(tickLabels([-2e22, 0, 2e22], 2e22)).toEqual(["-2e22", "0", "2e22"]);
  });

  it("writes tiny ticks with an exponent each", () => {
    expect(tickLabels([0, 2e-5, 4e-5, 6e-5], 2e-5)).toEqual(["0", "2e-5", "4e-5", "6e-5"]);
    expect(tickLabels([0, 2.5e-7, 5e-7, 7.5e-7, 1e-6], 2.5e-7)).toEqual(["0", "2.5e-7", "5e-7", "7.5e-7", "1e-6"]);
    expect(tickLabels([-1e-5, 0, 1e-5], 1e-5)).toEqual(["-1e-5", "0", "1e-5"]);
  });

  it("tells neighbouring ticks apart however fine the increment, in few characters", () => {
    const cases: [number, number][] = [
      [1_000_000, 1],
      [123_456_789, 10],
      [2 ** 40, 1000],
      [5e17, 1e14],
      [1.5e-7, 1e-9],
      [3e-5, 2.5e-6],
    ];
    for (const [start, incr] of cases) {
      // uPlot's ticks are multiples of the increment.
      const first = Math.ceil(start / incr) * incr;
      const splits = [0, 1, 2, 3].map((i) => first + i * incr);
      const labels = tickLabels(splits, incr)!;
      expect(labels).not.toBeNull();
      expect(new Set(labels).size, `${labels}`).toBe(labels.length);
      for (const label of labels) expect(label.length, label).toBeLessThanOrEqual(16);
      // Each label reads back to its tick, to the increment.
      for (const [i, label] of labels.entries()) {
        expect(Math.abs(parse(label) - splits[i]), label).toBeLessThan(incr / 2);
      }
    }
  });

  it("leaves a blank where a tick is not a number", () => {
    expect(tickLabels([0, Number.NaN, 2e6], 1e6)).toEqual(["0", "", "2M"]);
  });
});

/** A label back to a number ("1.5k" → 1500, "2.5e-7" → 2.5e-7). */
function parse(label: string): number {
  const units: Record<string, number> = { k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
  const last = label.slice(-1);
  return last in units ? Number(label.slice(0, -1)) * units[last] : Number(label);
}

describe("log tick labels", () => {
  it("writes each tick by its own magnitude: an exponent for tiny ones, not all the zeros", () => {
    // Before: "0.0000000001" (the decimals the smallest gap needs, for every tick).
    expect(logTickLabels([1e-10, 1e-8, 1e-6, 1e-4, 0.01])).toEqual(["1e-10", "1e-8", "1e-6", "0.0001", "0.01"]);
    expect(logTickLabels([2e-7, 5e-7, 1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 0.0001, 0.0002, 0.0005, 0.001])).toEqual([
      "2e-7", "5e-7", "1e-6", "2e-6", "5e-6", "1e-5", "2e-5", "5e-5", "0.0001", "0.0002", "0.0005", "0.001",
    ]);
    expect(logTickLabels([0.001, 0.01, 0.1, 1, 10])).toEqual(["0.001", "0.01", "0.1", "1", "10"]);
  });

  it("writes large ticks with an SI prefix (from 1k on an axis that reaches 100k), past it an exponent", () => {
    expect(logTickLabels([1, 100, 10000, 1e6, 1e8])).toEqual(["1", "100", "10k", "1M", "100M"]);
    expect(logTickLabels([1, 10, 100, 1000, 10000])).toEqual(["1", "10", "100", "1000", "10000"]);
    expect(logTickLabels([10, 1000, 1e5, 1e18, 1e22, 1e24])).toEqual(["10", "1000", "1e5", "1e18", "1e22", "1e24"]);
  });

  it("writes a log axis's evenly spaced ticks within a decade with the digits they need", () => {
    expect(logTickLabels([1.06, 1.08, 1.1, 1.12, 1.14])).toEqual(["1.06", "1.08", "1.1", "1.12", "1.14"]);
    expect(logTickLabels([0.0012, 0.0014, 0.0016])).toEqual(["0.0012", "0.0014", "0.0016"]);
    expect(logTickLabels([1.2e-7, 1.4e-7, 1.6e-7])).toEqual(["1.2e-7", "1.4e-7", "1.6e-7"]);
    expect(logTickLabels([250000, 300000, 350000])).toEqual(["250k", "300k", "350k"]);
  });

  it("is short, and reads back to its tick, on any log axis logSplits makes", () => {
    for (const [lo, hi] of [[1e-12, 1e12], [1e-10, 0.011], [3e-9, 2e-8], [0.9, 1.2], [5, 5e7]] as const) {
      for (const room of [100, 200, 400, 800]) {
        const splits = logSplits(lo, hi, room);
        const labels = logTickLabels(splits);
        expect(new Set(labels).size, `${labels}`).toBe(labels.length);
        for (const [i, label] of labels.entries()) {
          expect(label.length, label).toBeLessThanOrEqual(7);
          expect(parse(label) / splits[i], label).toBeCloseTo(1, 9);
        }
      }
    }
  });

  it("leaves a blank where a tick is not a number", () => {
    expect(logTickLabels([1, Number.NaN, 100])).toEqual(["1", "", "100"]);
  });
});
