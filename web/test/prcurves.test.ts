import { describe, expect, it } from "vitest";

import { curvePoints, type PrStep } from "../src/views/prcurves";

const step = (recall: number[], precision: number[]): PrStep => ({
  step: 0,
  wall_time: 0,
  recall,
  precision,
  thresholds: recall.map((_, i) => i / recall.length),
  true_positives: recall.map(() => 0),
  false_positives: recall.map(() => 0),
  true_negatives: recall.map(() => 0),
  false_negatives: recall.map(() => 0),
});

describe("curvePoints", () => {
  it("orders the route's points (by threshold) by recall, ascending", () => {
    // The route's order: thresholds up, recall down.
    const got = curvePoints(step([1, 0.8, 0.5, 0.1], [0.5, 0.6, 0.8, 1]));
    expect(got.recall).toEqual([0.1, 0.5, 0.8, 1]);
    expect(got.precision).toEqual([1, 0.8, 0.6, 0.5]);
    expect(got.index).toEqual([3, 2, 1, 0]);
  });
  it("puts the higher threshold first at equal recall (the curve drawn from high thresholds down)", () => {
    const got = curvePoints(step([1, 1, 1, 0.4], [0.41, 0.45, 0.53, 0.9]));
    expect(got.index).toEqual([3, 2, 1, 0]);
    expect(got.precision).toEqual([0.9, 0.53, 0.45, 0.41]);
  });
  it("takes an empty step", () => {
    expect(curvePoints(step([], []))).toEqual({ recall: [], precision: [], index: [] });
  });
});
