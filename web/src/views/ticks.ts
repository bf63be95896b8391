// The charts' numeric tick labels. uPlot writes a tick in full with the locale's grouping
// ("1,000,000,000,000"), which overlaps its neighbours once steps or values are large, and
// writes tiny values with all their zeros. Past those magnitudes each tick is written with an
// SI prefix (large) or an exponent (tiny) of its own, as d3's "~s" and "~e" formats do, with
// the decimals that tell it from the next tick (the axis's increment decides), trailing zeros
// dropped. In between, uPlot's labels stop at 3 decimals (Intl.NumberFormat's default): an
// increment finer than that (a learning rate from 1e-3 down, an accuracy plateau at 0.9504)
// gets the decimals it needs here too. Past the largest prefix (E, 1e18), an exponent.

const PREFIXES = ["", "k", "M", "G", "T", "P", "E"];
/** From this magnitude up (of the largest tick), ticks get an SI prefix. */
export const LARGE = 1e5;
/** Below this magnitude (of the largest tick, not zero), ticks get an exponent. */
export const TINY = 1e-4;
/** From this magnitude up, past the largest prefix's range, ticks get an exponent too. */
export const HUGE = 1e21;
/** The most decimals uPlot's own labels show. */
const UPLOT_DECIMALS = 3;

/** Decimals that write `incr / unit` exactly (to 9 significant digits). */
function decimals(incr: number, unit: number): number {
  if (!(incr > 0) || !Number.isFinite(incr)) return 0;
  const text = Number((incr / unit).toPrecision(9)).toString();
  const [mantissa, exponent] = text.split("e");
  const fraction = mantissa.split(".")[1]?.length ?? 0;
  const shift = exponent ? -Number(exponent) : 0;
  return Math.min(15, Math.max(0, fraction + shift));
}

/** "2.50" → "2.5", "3.000" → "3". */
function trim(fixed: string): string {
  return fixed.includes(".") ? fixed.replace(/\.?0+$/, "") : fixed;
}

function prefixed(v: number, incr: number): string {
  if (v === 0) return "0";
  const power = Math.max(0, Math.min(PREFIXES.length - 1, Math.floor(Math.log10(Math.abs(v)) / 3)));
  const unit = 10 ** (3 * power);
  return `${trim((v / unit).toFixed(decimals(incr, unit)))}${PREFIXES[power]}`;
}

function exponential(v: number, incr: number): string {
  if (v === 0) return "0";
  const exponent = Math.floor(Math.log10(Math.abs(v)));
  const [mantissa, written] = v.toExponential(decimals(incr, 10 ** exponent)).split("e");
  return `${trim(mantissa)}e${Number(written)}`;
}

function fixed(v: number, incr: number): string {
  return trim(v.toFixed(decimals(incr, 1)));
}

/** Labels for the ticks `splits` of an axis whose ticks are `incr` apart, or null when
 * uPlot's own labels read well (every tick below LARGE in magnitude, not all below TINY, and
 * ticks apart by 3 decimals or fewer). */
export function tickLabels(splits: readonly number[], incr: number): string[] | null {
  const finite = splits.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return null;
  const largest = Math.max(...finite.map((v) => Math.abs(v)));
  let write: (v: number, incr: number) => string;
  if (largest >= HUGE) write = exponential;
  else if (largest >= LARGE) write = prefixed;
  else if (largest > 0 && largest < TINY) write = exponential;
  else if (decimals(incr, 1) > UPLOT_DECIMALS) write = fixed;
  else return null;
  return splits.map((v) => (Number.isFinite(v) ? write(v, incr) : ""));
}

/** Labels for the ticks of a log axis (1, 2 and 5 times powers of ten, or evenly spaced round
 * values within a decade: see axes.ts's logSplits). Their magnitudes differ by decades, so each
 * is written by its own, with the digits it has: "1e-10", "1e-8", "0.0001", "0.01" (the
 * decimals that the smallest gap needs, given to every tick, wrote "0.0000000001"). An
 * exponent below TINY; an SI prefix from 1000 up when the axis reaches LARGE ("10k", "1M"),
 * an exponent from LARGE up when it reaches HUGE. */
export function logTickLabels(splits: readonly number[]): string[] {
  const largest = Math.max(0, ...splits.filter((v) => Number.isFinite(v)).map((v) => Math.abs(v)));
  return splits.map((v) => {
    if (!Number.isFinite(v)) return "";
    const a = Math.abs(v);
    // Its own digits: a tick is its own increment (decimals() writes it exactly).
    if (a > 0 && a < TINY) return exponential(v, a);
    if (largest >= HUGE && a >= LARGE) return exponential(v, a);
    if (largest >= LARGE && largest < HUGE && a >= 1000) return prefixed(v, a);
    return fixed(v, a);
  });
}
