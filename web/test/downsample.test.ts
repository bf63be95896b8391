import { describe, expect, it } from "vitest";
import { minMaxIndices } from "../src/downsample";

describe("minMaxIndices", () => {
  it("keeps every point of a short series", () => {
    expect(minMaxIndices([0, 1, 2], [5, 6, 7], 10)).toEqual([0, 1, 2]);
  });

  it("keeps first, last and every bucket's extremes, so a spike is never hidden", () => {
    const n = 100_000;
    const x = Array.from({ length: n }, (_, i) => i);
    const y = x.map((i) => Math.sin(i / 100));
    y[54_321] = 1000;
    y[12_345] = -1000;
    const keep = minMaxIndices(x, y, 100);
    expect(keep.length).toBeLessThanOrEqual(400);
    expect(keep[0]).toBe(0);
    expect(keep[keep.length - 1]).toBe(n - 1);
    expect(keep).toContain(54_321);
    expect(keep).toContain(12_345);
    for (let i = 1; i < keep.length; i++) expect(keep[i]).toBeGreaterThan(keep[i - 1]);
  });

  it("handles uneven x and a single x", () => {
    const x = [0, 0, 0, 0, 0, 0, 0, 0, 0];
    const y = [3, 1, 4, 1, 5, 9, 2, 6, 5];
    expect(minMaxIndices(x, y, 2).map((i) => y[i])).toEqual([3, 1, 9, 5]);
  });
});
