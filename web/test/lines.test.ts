import { describe, expect, it } from "vitest";
import { HAIRLINE_SPREAD, hairlinePair, LinePoints, linearProjection, type PathSink } from "../src/views/lines";

const box = { left: 40, top: 10, width: 400, height: 200 };

/** uPlot's valToPos(v, key, true) for a scale of this range (linear or log 10). */
function uplotPos(v: number, min: number, max: number, horizontal: boolean, log = false): number {
  const f = log ? Math.log10 : (x: number): number => x;
  const pct = (f(v) - f(min)) / (f(max) - f(min));
  return horizontal ? box.left + box.width * pct : box.top + box.height * (1 - pct);
}

function apply(p: { log: boolean; offset: number; factor: number }, v: number): number {
  return p.offset + (p.log ? Math.log10(v) : v) * p.factor;
}

describe("linearProjection", () => {
  it("gives uPlot's canvas position on linear and log-10 scales, both axes", () => {
    const x = linearProjection({ min: 100, max: 10_100, ori: 0, dir: 1, distr: 1 }, box)!;
    for (const v of [100, 2_345.5, 10_100, 20_000]) expect(apply(x, v)).toBeCloseTo(uplotPos(v, 100, 10_100, true), 9);
    const wall = linearProjection({ min: 1.7e9, max: 1.7e9 + 3_600, ori: 0 }, box)!;
    expect(apply(wall, 1.7e9 + 1_800)).toBeCloseTo(uplotPos(1.7e9 + 1_800, 1.7e9, 1.7e9 + 3_600, true), 6);
    const y = linearProjection({ min: -2, max: 6, ori: 1, dir: 1, distr: 1 }, box)!;
    for (const v of [-2, 0.25, 6]) expect(apply(y, v)).toBeCloseTo(uplotPos(v, -2, 6, false), 9);
    const logY = linearProjection({ min: 0.001, max: 10, ori: 1, distr: 3, log: 10 }, box)!;
    for (const v of [0.001, 0.5, 10]) expect(apply(logY, v)).toBeCloseTo(uplotPos(v, 0.001, 10, false, true), 9);
  });

  it("leaves any other scale to uPlot (null)", () => {
    expect(linearProjection({ min: null, max: 1, ori: 0 }, box)).toBeNull();
    expect(linearProjection({ min: 0, max: 1, ori: 0, dir: -1 }, box)).toBeNull();
    expect(linearProjection({ min: 1, max: 8, ori: 1, distr: 3, log: 2 }, box)).toBeNull();
    expect(linearProjection({ min: 0, max: 1, ori: 1, distr: 4 }, box)).toBeNull();
  });
});

describe("LinePoints", () => {
  it("projects the points in the range, skipping nulls, growing its arrays", () => {
    const at = new LinePoints();
    const x = { log: false, offset: 1, factor: 2 };
    const y = { log: true, offset: 100, factor: -10 };
    expect(at.fill([0, 1, 2, 3], [1, null, 100, 10], 1, 4, x, y)).toBe(2);
    expect([...at.x.slice(0, 2)]).toEqual([5, 7]);
    expect([...at.y.slice(0, 2)]).toEqual([80, 90]);
    const many = Array.from({ length: 5000 }, (_, i) => i);
    expect(at.fill(many, many, 0, 5000, x, (v) => v + 0.5)).toBe(5000);
    expect(at.x[4999]).toBe(1 + 2 * 4999);
    expect(at.y[4999]).toBe(4999.5);
  });
});

describe("hairlinePair", () => {
  it("draws two lines HAIRLINE_SPREAD px either side of the line, on pixel centres", () => {
    const record = (): PathSink & { points: [number, number][] } => {
      const points: [number, number][] = [];
      return { points, moveTo: (a, b) => points.push([a, b]), lineTo: (a, b) => points.push([a, b]) };
    };
    const one = record();
    const other = record();
    const x = Float64Array.from([0, 10, 20, 20]);
    const y = Float64Array.from([0, 0, 10, 30]);
    hairlinePair(x, y, 4, one, other);
    expect(one.points.length).toBe(4);
    for (let i = 0; i < 4; i++) {
      const [ax, ay] = one.points[i];
      const [bx, by] = other.points[i];
      expect((ax + bx) / 2).toBeCloseTo(x[i] + 0.5, 12);
      expect((ay + by) / 2).toBeCloseTo(y[i] + 0.5, 12);
      expect(Math.hypot(ax - bx, ay - by)).toBeCloseTo(2 * HAIRLINE_SPREAD, 12);
    }
    // A horizontal first segment: the two lines above and below it.
    expect(one.points[0][0]).toBeCloseTo(0.5, 12);
    expect(Math.abs(one.points[0][1] - other.points[0][1])).toBeCloseTo(2 * HAIRLINE_SPREAD, 12);
  });
});
