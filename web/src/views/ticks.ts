// The scalar charts' numeric tick labels. uPlot writes a tick in full with the locale's
// grouping ("1,000,000,000,000"), which overlaps its neighbours once steps or values are large;
// and it writes tiny values with all their zeros. Past those magnitudes a tick is written with
// an SI prefix (large) or an exponent (tiny), one for the whole axis (its largest tick's), with
// just the digits that tell a tick from the next: the decimals come from the axis's increment.

const PREFIXES = ["", "k", "M", "G", "T", "P", "E"];
/** At or above this, ticks get an SI prefix. */
export const LARGE = 1e5;
/** Below this (and not zero), ticks get an exponent. */
export const TINY = 1e-4;

/** Decimals that tell apart ticks `incr` apart, once divided by `unit`. */
function decimals(incr: number, unit: number): number {
  if (!(incr > 0) || !Number.isFinite(incr)) return 0;
  const scaled = incr / unit;
  // Round first: 0.1 / 1 is 0.1, but 3e-13 / 1e-12 is 0.30000000000000004.
  const digits = -Math.floor(Math.log10(scaled) + 1e-9);
  return Math.min(12, Math.max(0, digits));
}

/** Labels for the ticks `splits` of an axis whose ticks are `incr` apart, or null when
 * uPlot's own labels read well (every tick between TINY and LARGE in magnitude, or zero). */
export function tickLabels(splits: readonly number[], incr: number): string[] | null {
  const finite = splits.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return null;
  const largest = Math.max(...finite.map((v) => Math.abs(v)));
  if (largest >= LARGE) {
    const power = Math.min(PREFIXES.length - 1, Math.floor(Math.log10(largest) / 3));
    const unit = 10 ** (3 * power);
    const places = decimals(incr, unit);
    return splits.map((v) =>
      Number.isFinite(v) ? (v === 0 ? "0" : `${(v / unit).toFixed(places)}${PREFIXES[power]}`) : "",
    );
  }
  if (largest > 0 && largest < TINY) {
    // Every tick with the largest's exponent: 1.5e-5, 2.0e-5, 2.5e-5.
    const exponent = Math.floor(Math.log10(largest));
    const unit = 10 ** exponent;
    const places = decimals(incr, unit);
    return splits.map((v) => (Number.isFinite(v) ? (v === 0 ? "0" : `${(v / unit).toFixed(places)}e${exponent}`) : ""));
  }
  return null;
}
