// TensorBoard's smoothing of a scalar series: an exponential moving average, debiased so the
// first points are not pulled towards 0 (as in TensorBoard's line chart, vz_line_chart2):
//
//   last = last * w + (1 - w) * value;  n += 1;  smoothed = last / (1 - w ** n)
//
// Non-finite values are kept as they are and skipped by the average; a constant series is
// left as it is (no debiasing drift on a flat line); w = 1 needs no debiasing.

/** The smoothed values of `values` with weight `weight` (0 = none, < 1). */
export function smooth(values: ArrayLike<number>, weight: number): number[] {
  const state = new Smoother(weight);
  const out = new Array<number>(values.length);
  if (isConstant(values)) {
    for (let i = 0; i < values.length; i++) out[i] = values[i];
    return out;
  }
  for (let i = 0; i < values.length; i++) out[i] = state.push(values[i]);
  return out;
}

/** Whether every value equals the first (TensorBoard then leaves the series unsmoothed). */
export function isConstant(values: ArrayLike<number>): boolean {
  for (let i = 1; i < values.length; i++) if (values[i] !== values[0]) return false;
  return true;
}

/** The running state of the average: smoothed values of points appended one at a time. */
export class Smoother {
  private last = 0;
  private count = 0;
  constructor(readonly weight: number) {}

  push(value: number): number {
    if (!Number.isFinite(value)) return value;
    const w = this.weight;
    this.last = this.last * w + (1 - w) * value;
    this.count += 1;
    const debias = w === 1 ? 1 : 1 - Math.pow(w, this.count);
    return this.last / debias;
  }
}
