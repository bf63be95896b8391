// The points of one (run, tag) held by the page: columns sorted by step. Live points are
// merged in by step (a step already held takes the new value: a re-written step, as
// TensorBoard shows the last one), so a delta fetch that overlaps the stream's point, or
// arrives after it, leaves each step once.

import type { Schemas } from "./api_types";

/** One series' points as /api/v1/scalars?format=columns answers them. */
export type ScalarColumns = Schemas["ScalarColumns"];

export class Series {
  step: number[] = [];
  wall: number[] = [];
  value: number[] = [];

  static from(cols: ScalarColumns): Series {
    const s = new Series();
    s.merge(cols.step, cols.wall_time, cols.value.map(toNumber));
    return s;
  }

  /** Takes an answer's columns as an empty series' own (no copy, no point by point merge)
   * when its steps ascend strictly, as the API answers them; else merges them. Returns how
   * many steps are new. */
  adopt(cols: ScalarColumns): number {
    const { step, wall_time: wall, value } = cols;
    const n = step.length;
    let plain = this.step.length === 0 && wall.length === n && value.length === n;
    for (let i = 1; plain && i < n; i++) if (!(step[i] > step[i - 1])) plain = false;
    if (!plain) return this.merge(step, wall, value.map(toNumber));
    let numbers = true;
    for (let i = 0; numbers && i < n; i++) if (typeof value[i] !== "number") numbers = false;
    this.step = step;
    this.wall = wall;
    this.value = numbers ? (value as number[]) : value.map(toNumber);
    return n;
  }

  get length(): number {
    return this.step.length;
  }

  get lastStep(): number | undefined {
    return this.step.length ? this.step[this.step.length - 1] : undefined;
  }

  /** Merges points (steps ascending, as the API answers and the stream sends them). Returns
   * how many steps are new. */
  merge(steps: ArrayLike<number>, walls: ArrayLike<number>, values: ArrayLike<number>): number {
    let added = 0;
    for (let i = 0; i < steps.length; i++) {
      if (this.put(steps[i], walls[i], values[i])) added++;
    }
    return added;
  }

  /** One point; true if its step is new. Appending past the end costs O(1). */
  put(step: number, wall: number, value: number): boolean {
    const n = this.step.length;
    if (n === 0 || step > this.step[n - 1]) {
      this.step.push(step);
      this.wall.push(wall);
      this.value.push(value);
      return true;
    }
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.step[mid] < step) lo = mid + 1;
      else hi = mid;
    }
    if (this.step[lo] === step) {
      this.wall[lo] = wall;
      this.value[lo] = value;
      return false;
    }
    this.step.splice(lo, 0, step);
    this.wall.splice(lo, 0, wall);
    this.value.splice(lo, 0, value);
    return true;
  }
}

/** A scalar of the API (non-finite values are the strings "NaN", "Infinity", "-Infinity"). */
export function toNumber(v: number | string): number {
  if (typeof v === "number") return v;
  if (v === "Infinity") return Infinity;
  if (v === "-Infinity") return -Infinity;
  return NaN;
}
