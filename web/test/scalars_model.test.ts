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

  it("ignores outliers: a spike beyond the 5th or 95th percentile, far from the rest", () => {
    // 0..99 and a spike of 10,000 at step 50: the spike is left out, the line is whole.
    const values = Array.from({ length: 100 }, (_, i) => (i === 50 ? 10000 : i));
    const steps = values.map((_, i) => i);
    const spiky = new Map([["a", series(steps, values)]]);
    const m = prepareCard(spiky, ["a"], base);
    expect(yExtent(m, null)).toEqual([0, 10000]);
    expect(yExtent(m, null, false, true)).toEqual([0, 99]);
    const falling = prepareCard(new Map([["a", series(steps, values.map((v) => 0 - v))]]), ["a"], base);
    expect(yExtent(falling, null, false, true)).toEqual([-99, 0]);
    // In a zoom window, of the values in it (and where the line crosses its edges).
    // 40..49, 51..60, 10000: 21 values, the spike left out.
    expect(yExtent(prepareCard(spiky, ["a"], { ...base, range: [40, 60] }), [40, 60], false, true)).toEqual([40, 60]);
    // Between points: the crossings at 40.5 and 59.5 count (21 values).
    expect(yExtent(prepareCard(spiky, ["a"], { ...base, range: [40.5, 59.5] }), [40.5, 59.5], false, true)).toEqual([40.5, 59.5]);
    // 20 values: none left out, the spike neither.
    expect(yExtent(prepareCard(spiky, ["a"], { ...base, range: [40.5, 58.5] }), [40.5, 58.5], false, true)).toEqual([40.5, 10000]);
    // Three runs of two points each (a final metric): every line in range.
    const finals = new Map([0, 1, 2].map((r) => [`r${r}`, series([0, 10], [1 + r, 2 + r])]));
    expect(yExtent(prepareCard(finals, ["r0", "r1", "r2"], base), null, false, true)).toEqual([1, 4]);
    // Two values or fewer: both kept.
    const two = prepareCard(new Map([["a", series([0, 1], [1, 1000])]]), ["a"], base);
    expect(yExtent(two, null, false, true)).toEqual([1, 1000]);
    // Smoothing: the smoothed lines' values only (the faint raw spike may leave the chart);
    // the smoothed bump it makes is a smooth curve, whole.
    const smoothed = prepareCard(spiky, ["a"], { ...base, smoothing: 0.9 });
    const [lo, hi] = yExtent(smoothed, null, false, true)!;
    const main = smoothed.traces[0].smoothed!.filter((y): y is number => y !== null);
    expect([lo, hi]).toEqual([Math.min(...main, 99), Math.max(...main, 99)]);
    expect(hi).toBeLessThan(10000);
    // Nothing drawn: null.
    expect(yExtent(prepareCard(new Map(), [], base), null, false, true)).toBeNull();
  });

  it("keeps a learning-rate schedule whole: a monotone curve's start is no outlier", () => {
    const steps = Array.from({ length: 300 }, (_, i) => i);
    const wide = { ...base, width: 10000 };
    const extent = (ys: number[], logY = false): [number, number] | null =>
      yExtent(prepareCard(new Map([["lr", series(steps, ys)]]), ["lr"], { ...wide, logY }), null, logY, true);
    // 0.01 decaying exponentially: the axis stopped at 0.0086 (the 95th percentile).
    const decay = steps.map((s) => 0.01 * 0.99 ** s);
    expect(extent(decay)).toEqual([decay[299], 0.01]);
    expect(extent(decay, true)).toEqual([decay[299], 0.01]);
    // A step schedule: 0.01 for 10 steps, then 0.001, then 0.0001.
    const stepped = steps.map((s) => (s < 10 ? 0.01 : s < 200 ? 0.001 : 0.0001));
    expect(extent(stepped)).toEqual([0.0001, 0.01]);
    expect(extent(stepped, true)).toEqual([0.0001, 0.01]);
    // A linear warm-up to 0.01 then a cosine decay to 0: not monotone, but smooth.
    const cosine = steps.map((s) => (s < 20 ? (0.01 * s) / 20 : 0.005 * (1 + Math.cos((Math.PI * (s - 20)) / 279))));
    expect(extent(cosine)).toEqual([0, 0.01]);
    // A plateau (a schedule's phase, 20 steps at 0.01 between 0.001s) is no spike either.
    const plateau = steps.map((s) => (s >= 10 && s < 30 ? 0.01 : 0.001));
    expect(extent(plateau)).toEqual([0.001, 0.01]);
  });

  it("leaves out a real spike of a curve, and keeps the curve whole", () => {
    const steps = Array.from({ length: 200 }, (_, i) => i);
    const wide = { ...base, width: 10000 };
    // A loss from 1 down to 0.3, noisy, with a burst of 2 steps at 25 (and one below, at -5).
    let seed = 11;
    const noise = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647 - 0.5) * 0.02;
    const loss = steps.map((s) => 0.3 + 0.7 * Math.exp(-s / 60) + noise());
    const spiked = loss.map((y, s) => (s === 100 || s === 101 ? 25 : s === 150 ? -5 : y));
    const card = prepareCard(new Map([["loss", series(steps, spiked)]]), ["loss"], wide);
    const rest = spiked.filter((_, s) => s !== 100 && s !== 101 && s !== 150);
    expect(yExtent(card, null, false, true)).toEqual([Math.min(...rest), Math.max(...rest)]);
    expect(yExtent(card, null, false, false)).toEqual([-5, 25]);
    // On a log scale, of the positive values: the spike up is left out too.
    const logged = prepareCard(new Map([["loss", series(steps, spiked)]]), ["loss"], { ...wide, logY: true });
    expect(yExtent(logged, null, true, true)).toEqual([Math.min(...rest), Math.max(...rest)]);
    // A loss whose first 3 steps are a hundred times the rest (not monotone: it then rises).
    const first = steps.map((s) => (s < 3 ? 100 : 1 + 0.01 * s));
    expect(yExtent(prepareCard(new Map([["a", series(steps, first)]]), ["a"], wide), null, false, true)).toEqual([1.03, 2.99]);
    // The same spike in one of several runs: left out; each run's latest value stays in range.
    const other = steps.map((s) => 0.5 + 0.001 * s);
    const runs = new Map([["loss", series(steps, spiked)], ["other", series(steps, other)]]);
    const both = yExtent(prepareCard(runs, ["loss", "other"], wide), null, false, true)!;
    expect(both).toEqual([Math.min(...rest, ...other), Math.max(...rest, ...other)]);
  });

  it("ignores no outlier of noise: its whole range", () => {
    // Uniform noise has no value far from the rest (and fewer than 21 values are all kept).
    let seed = 7;
    const random = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 200 - 100;
    for (const n of [3, 4, 5, 21, 99, 600, 601, 2500]) {
      const ys = Array.from({ length: n }, () => Math.round(random() * 1000) / 1000);
      const card = prepareCard(new Map([["a", series(ys.map((_, i) => i), ys)]]), ["a"], { ...base, width: 10000 });
      expect(yExtent(card, null, false, true), `n=${n}`).toEqual([Math.min(...ys), Math.max(...ys)]);
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
