import { describe, expect, it } from "vitest";
import { type ScalarColumns, Series, toNumber } from "../src/series";

describe("Series (live points merged by step)", () => {
  it("appends past the end and reports new steps", () => {
    const s = Series.from({ step: [0, 1, 2], wall_time: [10, 11, 12], value: [1, 2, 3] });
    expect(s.put(5, 15, 6)).toBe(true);
    expect(s.step).toEqual([0, 1, 2, 5]);
    expect(s.lastStep).toBe(5);
  });

  it("fills in a delta that overlaps the stream's point, each step once", () => {
    const s = Series.from({ step: [0, 1, 2], wall_time: [10, 11, 12], value: [1, 2, 3] });
    s.put(5, 15, 6); // the stream's event: the commit's last point
    const added = s.merge([3, 4, 5], [13, 14, 15], [4, 5, 6]); // the delta fetch from step 3
    expect(added).toBe(2);
    expect(s.step).toEqual([0, 1, 2, 3, 4, 5]);
    expect(s.value).toEqual([1, 2, 3, 4, 5, 6]);
    expect(s.wall).toEqual([10, 11, 12, 13, 14, 15]);
  });

  it("adopts an answer's columns as an empty series' own, as merging them would give", () => {
    const cols: ScalarColumns = { step: [0, 1, 5], wall_time: [10, 11, 15], value: [1, "NaN", 3] };
    const merged = new Series();
    merged.merge(cols.step, cols.wall_time, cols.value.map(toNumber));
    const s = new Series();
    expect(s.adopt(cols)).toBe(3);
    expect([s.step, s.wall, s.value]).toEqual([merged.step, merged.wall, merged.value]);
    expect(s.step).toBe(cols.step); // taken, not copied
    s.put(3, 13, 2); // and still merged into by step
    expect(s.step).toEqual([0, 1, 3, 5]);
    const numbers = { step: [0, 1], wall_time: [0, 1], value: [1, 2] };
    const t = new Series();
    t.adopt(numbers);
    expect(t.value).toBe(numbers.value);
  });

  it("merges, not adopts, columns whose steps do not strictly ascend", () => {
    const s = new Series();
    expect(s.adopt({ step: [2, 1, 1], wall_time: [12, 11, 13], value: [3, 2, 4] })).toBe(2);
    expect([s.step, s.wall, s.value]).toEqual([[1, 2], [13, 12], [4, 3]]);
  });

  it("a re-written step takes the new value", () => {
    const s = Series.from({ step: [0, 1, 2], wall_time: [10, 11, 12], value: [1, 2, 3] });
    expect(s.put(1, 20, 9)).toBe(false);
    expect(s.value).toEqual([1, 9, 3]);
    expect(s.length).toBe(3);
  });

  it("reads the API's non-finite spellings", () => {
    const s = Series.from({ step: [0, 1, 2], wall_time: [0, 0, 0], value: ["NaN", "Infinity", "-Infinity"] });
    expect(s.value[0]).toBeNaN();
    expect(s.value.slice(1)).toEqual([Infinity, -Infinity]);
    expect(toNumber(2.5)).toBe(2.5);
  });
});
