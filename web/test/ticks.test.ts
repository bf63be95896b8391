import { describe, expect, it } from "vitest";

import { tickLabels } from "../src/views/ticks";

describe("tick labels", () => {
  it("leaves ordinary magnitudes to uPlot", () => {
    expect(tickLabels([0, 2000, 4000, 6000], 2000)).toBeNull();
    expect(tickLabels([0, 0.25, 0.5], 0.25)).toBeNull();
    expect(tickLabels([0.0002, 0.0004], 0.0002)).toBeNull();
    expect(tickLabels([], 1)).toBeNull();
  });

  it("writes large ticks with an SI prefix and the decimals the increment needs", () => {
    const splits = [0, 2e11, 4e11, 6e11, 8e11, 1e12];
    expect(tickLabels(splits, 2e11)).toEqual(["0", "0.2T", "0.4T", "0.6T", "0.8T", "1.0T"]);
    expect(tickLabels([1.1e12, 1.2e12, 1.3e12], 1e11)).toEqual(["1.1T", "1.2T", "1.3T"]);
    expect(tickLabels([100000, 100500, 101000], 500)).toEqual(["100.0k", "100.5k", "101.0k"]);
    expect(tickLabels([-3e6, 0, 3e6], 3e6)).toEqual(["-3M", "0", "3M"]);
  });

  it("tells neighbouring ticks apart however fine the increment", () => {
    for (const [start, incr] of [
      [1_000_000, 1],
      [123_456_789, 10],
      [2 ** 40, 1000],
      [5e17, 1e14],
    ]) {
      const splits = [0, 1, 2, 3].map((i) => start + i * incr);
      const labels = tickLabels(splits, incr)!;
      expect(labels).not.toBeNull();
      expect(new Set(labels).size).toBe(labels.length);
      for (const label of labels) expect(label.length).toBeLessThanOrEqual(16);
    }
  });

  it("writes tiny ticks with one exponent", () => {
    expect(tickLabels([0, 2e-5, 4e-5, 6e-5], 2e-5)).toEqual(["0", "2e-5", "4e-5", "6e-5"]);
    expect(tickLabels([1.5e-7, 2e-7, 2.5e-7], 5e-8)).toEqual(["1.5e-7", "2.0e-7", "2.5e-7"]);
  });

  it("leaves a blank where a tick is not a number", () => {
    expect(tickLabels([0, Number.NaN, 2e6], 1e6)).toEqual(["0", "", "2M"]);
  });
});
