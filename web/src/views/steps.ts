// Pure helpers about steps, shared by the views.

/** The index of the step in `steps` (sorted ascending) nearest to `step` (the earlier of two
 * equally near); -1 for none. */
export function nearestIndex(steps: readonly number[], step: number): number {
  if (steps.length === 0) return -1;
  let lo = 0;
  let hi = steps.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid] < step) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && step - steps[lo - 1] <= steps[lo] - step) return lo - 1;
  return lo;
}
