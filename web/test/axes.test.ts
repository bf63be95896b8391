import { describe, expect, it } from "vitest";

import { logLimits, logSplits, WHOLE_INCRS } from "../src/views/axes";

describe("WHOLE_INCRS", () => {
  it("holds whole numbers only, ascending, from 1 to past 1e18", () => {
    expect(WHOLE_INCRS.every((v) => Number.isInteger(v))).toBe(true);
    expect(WHOLE_INCRS.every((v, i) => i === 0 || v > WHOLE_INCRS[i - 1])).toBe(true);
    expect(WHOLE_INCRS.slice(0, 8)).toEqual([1, 2, 5, 10, 20, 25, 50, 100]);
    expect(WHOLE_INCRS[WHOLE_INCRS.length - 1]).toBeGreaterThan(1e18);
  });
});

describe("logLimits", () => {
  it("pads the lines' own extent in log space, not out to whole decades", () => {
    const [lo, hi] = logLimits(1.05, 1.15);
    expect(lo).toBeGreaterThan(1.04);
    expect(lo).toBeLessThan(1.05);
    expect(hi).toBeGreaterThan(1.15);
    expect(hi).toBeLessThan(1.16);
    const [a, b] = logLimits(0.001, 10);
    expect(Math.log10(a)).toBeCloseTo(-3.2);
    expect(Math.log10(b)).toBeCloseTo(1.2);
  });
  it("gives a single value room either side", () => {
    const [lo, hi] = logLimits(0.1, 0.1);
    expect(lo).toBeCloseTo(0.1 / 1.05);
    expect(hi).toBeCloseTo(0.1 * 1.05);
  });
});

describe("logSplits", () => {
  it("puts round ticks inside a range narrower than a decade", () => {
    const ticks = logSplits(1.045, 1.155, 200);
    expect(ticks.length).toBeGreaterThanOrEqual(3);
    expect(ticks.every((v) => v >= 1.045 && v <= 1.155)).toBe(true);
    expect(ticks).toEqual([1.06, 1.08, 1.1, 1.12, 1.14]);
  });
  it("uses 1, 2, 5 times powers of ten over decades, or powers alone when room is short", () => {
    expect(logSplits(0.9, 110, 200)).toEqual([1, 2, 5, 10, 20, 50, 100]);
    expect(logSplits(0.0009, 11, 160)).toEqual([0.001, 0.01, 0.1, 1, 10]);
    expect(logSplits(0.0009, 11, 120)).toEqual([0.01, 1]);
    expect(logSplits(1, 1000, 400)).toEqual([1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]);
    // Room for every one: 1 to 9 times.
    expect(logSplits(1, 100, 800)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
  });
  it("skips powers of ten when even they are too many for the room", () => {
    const ticks = logSplits(1e-12, 1e12, 120);
    expect(ticks.length).toBeLessThanOrEqual(4);
    expect(ticks.every((v) => Number.isInteger(Math.round(Math.log10(v) * 1e9) / 1e9))).toBe(true);
  });
  it("spreads ticks over a range of one to two decades, not only near its top", () => {
    // A learning rate from 0.01 down to 1.8e-4 on a chart with room for 5 ticks: 0.005 and
    // 0.01 only, the lower 80 % of the axis unlabelled (a within-a-decade linear step).
    expect(logSplits(1.5e-4, 0.012, 140)).toEqual([0.0003, 0.001, 0.003, 0.01]);
    for (const [lo, hi] of [[1.5e-4, 0.012], [0.9, 50], [0.02, 3], [7, 900]] as const) {
      for (const room of [84, 112, 140, 200]) {
        const ticks = logSplits(lo, hi, room);
        expect(ticks.length, `${lo}..${hi} in ${room}px: ${ticks}`).toBeGreaterThanOrEqual(2);
        expect(ticks.length).toBeLessThanOrEqual(Math.max(2, Math.floor(room / 28)));
        // The lowest tick in the lower half of the axis (in log space).
        const at = (Math.log(ticks[0]) - Math.log(lo)) / (Math.log(hi) - Math.log(lo));
        expect(at, `${lo}..${hi} in ${room}px: ${ticks}`).toBeLessThan(0.5);
      }
    }
  });
  it("writes negative powers exactly", () => {
    expect(logSplits(0.0009, 0.011, 120)).toEqual([0.001, 0.002, 0.005, 0.01]);
  });
  it("has no ticks for a range a log scale cannot hold", () => {
    expect(logSplits(0, 10, 200)).toEqual([]);
    expect(logSplits(5, 5, 200)).toEqual([]);
  });
});
