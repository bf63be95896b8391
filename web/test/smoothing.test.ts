import { describe, expect, it } from "vitest";
import { isConstant, smooth } from "../src/smoothing";

/** TensorBoard's smoothing, as written in its line chart (vz_line_chart2), for comparison. */
function tensorboard(values: number[], smoothingWeight: number): number[] {
  let last = values.length > 0 ? 0 : NaN;
  let numAccum = 0;
  const constant = values.every((v) => v === values[0]);
  return values.map((nextVal) => {
    if (constant || !Number.isFinite(nextVal)) return nextVal;
    last = last * smoothingWeight + (1 - smoothingWeight) * nextVal;
    numAccum++;
    let debiasWeight = 1;
    if (smoothingWeight !== 1) debiasWeight = 1 - Math.pow(smoothingWeight, numAccum);
    return last / debiasWeight;
  });
}

describe("smooth", () => {
  it("is TensorBoard's debiased EMA", () => {
    const values = Array.from({ length: 200 }, (_, i) => Math.sin(i / 7) + ((i * 7919) % 13) / 10);
    for (const w of [0, 0.3, 0.6, 0.9, 0.999, 1]) {
      const got = smooth(values, w);
      const want = tensorboard(values, w);
      got.forEach((v, i) => expect(v).toBeCloseTo(want[i], 12));
    }
  });

  it("starts at the first value (debiased, not pulled towards 0)", () => {
    expect(smooth([10, 10.5, 9.5], 0.9)[0]).toBeCloseTo(10, 12);
  });

  it("keeps non-finite values and skips them in the average", () => {
    const values = [1, NaN, 3, Infinity, 5];
    const got = smooth(values, 0.5);
    expect(got[1]).toBeNaN();
    expect(got[3]).toBe(Infinity);
    const want = tensorboard(values, 0.5);
    expect(got[4]).toBeCloseTo(want[4], 12);
    expect(got[2]).toBeCloseTo(want[2], 12);
  });

  it("leaves a constant series as it is", () => {
    expect(isConstant([2, 2, 2])).toBe(true);
    expect(smooth([2, 2, 2], 0.9)).toEqual([2, 2, 2]);
    expect(smooth([], 0.9)).toEqual([]);
  });

  it("weight 0 is the raw series", () => {
    expect(smooth([1, 5, 2], 0)).toEqual([1, 5, 2]);
  });
});
