import uPlot from "uplot";
import { describe, expect, it } from "vitest";
import { Series } from "../src/series";
import { formatValue, prepareCard, stepRange, type TooltipRow, tooltipRows, valuesAt, windowIndices, xExtent, yExtent } from "../src/views/scalars_model";

function series(steps: number[], values: number[], wall0 = 1000): Series {
  return Series.from({ step: steps, wall_time: steps.map((s) => wall0 + s), value: values });
}

const base = { smoothing: 0, x: "step" as const, logY: false, ignoreOutliers: false, width: 100, range: null };

describe("a card's model", () => {
  const data = new Map([
    ["a", series([0, 1, 2, 3], [1, 2, 3, 4])],
    ["b", series([0, 2, 5], [5, -1, 0.5])],
  ]);

  it("counts the points drawn, the last step and last values of the runs shown", () => {
    const m = prepareCard(data, ["a", "b", "missing"], base);
    expect(m.drawn).toEqual(["a", "b"]);
    expect(m.points).toBe(7);
    expect(m.lastStep).toBe(5);
    expect(m.lastValue).toEqual({ a: 4, b: 0.5 });
    expect(prepareCard(data, ["a"], base).lastStep).toBe(3);
  });

  it("leaves out what a log scale cannot show", () => {
    const m = prepareCard(data, ["b"], { ...base, logY: true });
    expect(m.traces[0].raw).toEqual([5, null, 0.5]);
  });

  it("smooths the whole series, then keeps the window's points", () => {
    const m = prepareCard(data, ["a"], { ...base, smoothing: 0.5, range: [1.5, 2.5] });
    // The window's points and one neighbour each side.
    expect(m.traces[0].xs).toEqual([1, 2, 3]);
    expect(m.points).toBe(3);
    expect(m.traces[0].smoothed![0]).toBeCloseTo(prepareCard(data, ["a"], { ...base, smoothing: 0.5 }).traces[0].smoothed![1]!);
    expect(m.lastValue.a).not.toBe(4);
  });

  it("keeps a spike of a long series at any width", () => {
    const steps = Array.from({ length: 100_000 }, (_, i) => i);
    const values = steps.map((i) => (i === 77_777 ? 1000 : Math.sin(i)));
    const m = prepareCard(new Map([["r", series(steps, values)]]), ["r"], { ...base, width: 50 });
    expect(m.points).toBeLessThanOrEqual(200);
    expect(m.traces[0].raw).toContain(1000);
  });
});

describe("window and tooltip lookups", () => {
  it("finds the window's indices with a neighbour each side", () => {
    expect(windowIndices([0, 10, 20, 30, 40], [10, 30])).toEqual([0, 5]);
    expect(windowIndices([0, 10, 20, 30, 40], [11, 19])).toEqual([1, 3]);
    expect(windowIndices([0, 10, 20], null)).toEqual([0, 3]);
    expect(windowIndices([0, 10, 20], [50, 60])).toEqual([2, 3]);
  });

  it("gives each run's point nearest the pointer", () => {
    const data = new Map([
      ["a", series([0, 10, 20], [1, 2, 3])],
      ["b", series([0, 4, 8, 12], [7, 8, 9, 10])],
    ]);
    const m = prepareCard(data, ["a", "b"], base);
    const rows = valuesAt(m, 11);
    expect(rows.map((r) => [r.run, r.step, r.value])).toEqual([
      ["a", 10, 2],
      ["b", 12, 10],
    ]);
    expect(valuesAt(m, -5).map((r) => r.step)).toEqual([0, 0]);
    expect(valuesAt(m, 99).map((r) => r.step)).toEqual([20, 12]);
  });

  it("maps a wall-time window onto the steps to fetch", () => {
    const s = series([0, 10, 20, 30], [1, 2, 3, 4], 100);
    expect(stepRange([s], "wall", [112, 125])).toEqual([10, 30]);
    expect(stepRange([s], "step", [1.5, 7.2])).toEqual([1, 8]);
    expect(stepRange([], "wall", [0, 1])).toBeNull();
  });

  it("formats values for reading", () => {
    expect(formatValue(0.123456)).toBe("0.1235");
    expect(formatValue(1234567)).toBe("1.235e+6");
    expect(formatValue(NaN)).toBe("NaN");
    expect(formatValue(-Infinity)).toBe("−∞");
  });
});

describe("the chart's extents (its scales, without aligning the runs for uPlot)", () => {
  it("gives the x extent of every run's kept points, null for none", () => {
    const m = prepareCard(new Map([["a", series([3, 5, 9], [1, 2, 3])], ["b", series([1, 4], [5, 6])]]), ["a", "b"], base);
    expect(xExtent(m)).toEqual([1, 9]);
    expect(xExtent(prepareCard(new Map(), [], base))).toBeNull();
  });

  it("gives the y extent of raw and smoothed lines inside the window, as uPlot's auto range read it, and where they cross its edges", () => {
    const steps = Array.from({ length: 50 }, (_, i) => i * 2);
    const a = series(steps, steps.map((s) => Math.sin(s / 7) * 10));
    const b = series(steps.map((s) => s + 1), steps.map((s) => (s === 40 ? 100 : Math.cos(s / 5))));
    const data = new Map([["a", a], ["b", b]]);
    for (const range of [null, [10, 30], [39.5, 41.5], [200, 300]] as const) {
      for (const smoothing of [0, 0.9]) {
        const m = prepareCard(data, ["a", "b"], { ...base, smoothing, range });
        // What uPlot's auto range read: the aligned columns' values at the xs inside the window.
        const tables = m.traces.map((t) => [t.xs, t.raw, ...(t.smoothed ? [t.smoothed] : [])]);
        const aligned = uPlot.join(tables as uPlot.AlignedData[]);
        let lo = Infinity;
        let hi = -Infinity;
        aligned[0].forEach((x, i) => {
          if (range !== null && (x < range[0] || x > range[1])) return;
          for (const col of aligned.slice(1)) {
            const y = col[i];
            if (typeof y === "number") [lo, hi] = [Math.min(lo, y), Math.max(hi, y)];
          }
        });
        // Where each line crosses an edge of the window (strictly between two of its points).
        for (const edge of range ?? []) {
          for (const t of m.traces) {
            for (const ys of t.smoothed ? [t.raw, t.smoothed] : [t.raw]) {
              for (let i = 0; i + 1 < t.xs.length; i++) {
                if (!(t.xs[i] < edge && edge < t.xs[i + 1])) continue;
                const [y0, y1] = [ys[i]!, ys[i + 1]!];
                const y = y0 + ((y1 - y0) * (edge - t.xs[i])) / (t.xs[i + 1] - t.xs[i]);
                [lo, hi] = [Math.min(lo, y), Math.max(hi, y)];
              }
            }
          }
        }
        const got = yExtent(m, range);
        if (lo > hi) expect(got).toBeNull();
        else {
          expect(got![0]).toBeCloseTo(lo, 9);
          expect(got![1]).toBeCloseTo(hi, 9);
        }
      }
    }
    // The spike at step 41 (b's step 40 + 1) is in the window that holds it, not in others.
    expect(yExtent(prepareCard(data, ["a", "b"], { ...base, range: [39.5, 41.5] }), [39.5, 41.5])![1]).toBe(100);
  });

  it("holds the line through a window between two points (a zoom into a sparse stretch)", () => {
    const sparse = new Map([["a", series([0, 1000, 2000], [1, 3, 2])]]);
    const range = [400, 600] as const;
    const m = prepareCard(sparse, ["a"], { ...base, range });
    // No point inside: the segment from (0, 1) to (1000, 3) crosses at 1.8 and 2.2.
    const got = yExtent(m, range)!;
    expect(got[0]).toBeCloseTo(1.8, 12);
    expect(got[1]).toBeCloseTo(2.2, 12);
    // Gaps are spanned as the line spans them; a window past the last point holds nothing.
    const gappy = new Map([["a", series([0, 10, 20], [1, NaN, 3])]]);
    const g = yExtent(prepareCard(gappy, ["a"], { ...base, range: [9, 11] }), [9, 11])!;
    expect(g[0]).toBeCloseTo(1.9, 12); // (0, 1) to (20, 3), over the NaN at 10
    expect(g[1]).toBeCloseTo(2.1, 12);
    expect(yExtent(prepareCard(sparse, ["a"], { ...base, range: [2500, 3000] }), [2500, 3000])).toBeNull();
    // On a log scale the line is straight in log space: 1 → 100 crosses 10 half way.
    const logs = new Map([["a", series([0, 10], [1, 100])]]);
    const l = yExtent(prepareCard(logs, ["a"], { ...base, logY: true, range: [5, 5.000001] }), [5, 5.000001], true)!;
    expect(l[0]).toBeCloseTo(10, 4);
  });

  it("ignores outliers: the 5th to the 95th percentile of the main lines' values", () => {
    // 0..99 and a spike of 10,000 at step 50: the spike and the lowest values are left out.
    const values = Array.from({ length: 100 }, (_, i) => (i === 50 ? 10000 : i));
    const steps = values.map((_, i) => i);
    const spiky = new Map([["a", series(steps, values)]]);
    const m = prepareCard(spiky, ["a"], base);
    expect(yExtent(m, null)).toEqual([0, 10000]);
    // Sorted: 0..49, 51..99, 10000; indices floor(0.05 * 99) = 4 and ceil(0.95 * 99) = 95 (4
    // and 96), and the line's latest value, 99, always in range.
    expect(yExtent(m, null, false, true)).toEqual([4, 99]);
    const falling = prepareCard(new Map([["a", series(steps, values.map((v) => -v))]]), ["a"], base);
    expect(yExtent(falling, null, false, true)).toEqual([-99, -4]);
    // In a zoom window, of the values in it (and where the line crosses its edges); the latest
    // value is the line's at the window's right end.
    // 40..49, 51..60, 10000: indices 1 and 19.
    expect(yExtent(prepareCard(spiky, ["a"], { ...base, range: [40, 60] }), [40, 60], false, true)).toEqual([41, 60]);
    // Between points: the crossings at 40.5 and 59.5 count, the right one as the latest (21
    // values: the lowest and the highest left out).
    expect(yExtent(prepareCard(spiky, ["a"], { ...base, range: [40.5, 59.5] }), [40.5, 59.5], false, true)).toEqual([41, 59.5]);
    // 20 values: none left out, the spike neither.
    expect(yExtent(prepareCard(spiky, ["a"], { ...base, range: [40.5, 58.5] }), [40.5, 58.5], false, true)).toEqual([40.5, 10000]);
    // Three runs of two points each (a final metric): every line in range (the lowest point of
    // six used to be left out, and most of its line with it).
    const finals = new Map([0, 1, 2].map((r) => [`r${r}`, series([0, 10], [1 + r, 2 + r])]));
    expect(yExtent(prepareCard(finals, ["r0", "r1", "r2"], base), null, false, true)).toEqual([1, 4]);
    // Two values or fewer: both kept.
    const two = prepareCard(new Map([["a", series([0, 1], [1, 1000])]]), ["a"], base);
    expect(yExtent(two, null, false, true)).toEqual([1, 1000]);
    // Smoothing: the smoothed lines' values only (the faint raw ones may leave the chart).
    const smoothed = prepareCard(spiky, ["a"], { ...base, smoothing: 0.9 });
    const [lo, hi] = yExtent(smoothed, null, false, true)!;
    const main = [...smoothed.traces[0].smoothed!].filter((y): y is number => y !== null).sort((a, b) => a - b);
    // ... and each run's latest values, smoothed and raw (99).
    const newest = smoothed.traces[0].smoothed![smoothed.traces[0].smoothed!.length - 1]!;
    expect([lo, hi]).toEqual([
      Math.min(main[Math.floor(0.05 * (main.length - 1))], newest, 99),
      Math.max(main[Math.ceil(0.95 * (main.length - 1))], newest, 99),
    ]);
    expect(hi).toBeLessThan(10000);
    // Nothing drawn: null.
    expect(yExtent(prepareCard(new Map(), [], base), null, false, true)).toBeNull();
    // The same percentiles as a sort, at any size (selection, not a sort, finds them).
    let seed = 7;
    const random = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 200 - 100;
    for (const n of [3, 4, 5, 21, 99, 600, 601, 2500]) {
      const ys = Array.from({ length: n }, () => Math.round(random() * 1000) / 1000);
      const card = prepareCard(new Map([["a", series(ys.map((_, i) => i), ys)]]), ["a"], { ...base, width: 10000 });
      const sorted = [...ys].sort((a, b) => a - b);
      const last = n - 1;
      const newest = ys[last];
      expect(yExtent(card, null, false, true), `n=${n}`).toEqual([
        Math.min(sorted[Math.floor(0.05 * last)], newest),
        Math.max(sorted[Math.ceil(0.95 * last)], newest),
      ]);
    }
  });

  it("skips gaps: a log scale's non-positive values", () => {
    const m = prepareCard(new Map([["a", series([1, 2, 3], [-1, 0, 5])]]), ["a"], { ...base, logY: true });
    expect(yExtent(m, null)).toEqual([5, 5]);
  });
});

describe("tooltipRows", () => {
  const row = (run: string, value: number, smoothed: number | null = null): TooltipRow => ({ run, x: 5, step: 5, wall: 0, value, smoothed });

  it("lists every row while they fit", () => {
    const rows = [row("a", 1), row("b", 2)];
    expect(tooltipRows(rows, 0)).toEqual({ shown: rows, more: 0 });
  });

  it("lists the rows nearest the pointer, highest first, and counts the others", () => {
    const rows = [row("a", 1), row("b", 5), row("c", 3), row("d", NaN), row("e", 4.2)];
    const { shown, more } = tooltipRows(rows, 4, 3);
    expect(shown.map((r) => r.run)).toEqual(["b", "e", "c"]);
    expect(more).toBe(2);
  });

  it("measures the smoothed value when there is one; +inf lies on top and NaN last", () => {
    const rows = [row("a", 100, 1), row("b", 1, 50), row("c", Infinity), row("d", NaN), row("e", 7)];
    expect(tooltipRows(rows, 0, 2).shown.map((r) => r.run)).toEqual(["e", "a"]);
    expect(tooltipRows(rows, 0, 4).shown.map((r) => r.run)).toEqual(["c", "b", "e", "a"]);
    const nan = [row("p", 1), row("q", NaN), row("t", NaN)];
    expect(tooltipRows(nan, 0, 2).shown.map((r) => r.run)).toEqual(["p", "q"]);
  });
});
