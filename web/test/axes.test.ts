import { describe, expect, it } from "vitest";

import { WHOLE_INCRS } from "../src/views/axes";

describe("WHOLE_INCRS", () => {
  it("holds whole numbers only, ascending, from 1 to past 1e18", () => {
    expect(WHOLE_INCRS.every((v) => Number.isInteger(v))).toBe(true);
    expect(WHOLE_INCRS.every((v, i) => i === 0 || v > WHOLE_INCRS[i - 1])).toBe(true);
    expect(WHOLE_INCRS.slice(0, 8)).toEqual([1, 2, 5, 10, 20, 25, 50, 100]);
    expect(WHOLE_INCRS[WHOLE_INCRS.length - 1]).toBeGreaterThan(1e18);
  });
});
