import { describe, expect, it } from "vitest";

import { formatBytes, formatSeconds, progress, push, rate } from "../src/views/format";
import { nearestIndex } from "../src/views/steps";

describe("formatting", () => {
  it("writes bytes in binary units", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(1536)).toBe("1.50 KiB");
    expect(formatBytes(250 * 1024 * 1024)).toBe("250 MiB");
  });
  it("writes durations for people", () => {
    expect(formatSeconds(0.0123)).toBe("12 ms");
    expect(formatSeconds(4.25)).toBe("4.3 s");
    expect(formatSeconds(125)).toBe("2 min 5 s");
    expect(formatSeconds(null)).toBe("–");
  });
});

describe("rate", () => {
  it("is the counter's change per second over the window", () => {
    let samples = push([], { t: 0, value: 0 }, 10);
    expect(rate(samples)).toBeNull();
    samples = push(samples, { t: 2, value: 100 }, 10);
    samples = push(samples, { t: 4, value: 400 }, 10);
    expect(rate(samples)).toBe(100);
    // Older samples leave the window.
    samples = push(samples, { t: 13, value: 1300 }, 10);
    expect(samples.map((s) => s.t)).toEqual([4, 13]);
    expect(rate(samples)).toBe(100);
  });
  it("starts again after a counter that went back (a daemon restart)", () => {
    const samples = [
      { t: 0, value: 500 },
      { t: 1, value: 10 },
      { t: 3, value: 50 },
    ];
    expect(rate(samples)).toBe(20);
  });
});

describe("progress", () => {
  it("is done/total in [0, 1], and 1 with nothing to read", () => {
    expect(progress(25, 100)).toBe(0.25);
    expect(progress(0, 0)).toBe(1);
    expect(progress(120, 100)).toBe(1);
  });
});

describe("nearestIndex", () => {
  it("finds the nearest step, the earlier of two equally near", () => {
    const steps = [0, 10, 20, 40];
    expect(nearestIndex(steps, 12)).toBe(1);
    expect(nearestIndex(steps, 15)).toBe(1);
    expect(nearestIndex(steps, 31)).toBe(3);
    expect(nearestIndex(steps, -5)).toBe(0);
    expect(nearestIndex(steps, 99)).toBe(3);
    expect(nearestIndex([], 3)).toBe(-1);
  });
});
