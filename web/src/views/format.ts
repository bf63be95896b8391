// Pure formatting and rates for the status view.

export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0)} ${units[u]}`;
}

export function formatSeconds(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return "–";
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

/** A sample of a counter at a time (seconds). */
export interface Sample {
  t: number;
  value: number;
}

/** The counter's rate per second over the samples kept (the last `windowSeconds`), or null
 * with fewer than two samples or no time between them; a counter that went back (a restart)
 * starts the window again. */
export function rate(samples: readonly Sample[]): number | null {
  let start = 0;
  for (let i = 1; i < samples.length; i++) if (samples[i].value < samples[i - 1].value) start = i;
  const a = samples[start];
  const b = samples[samples.length - 1];
  if (!a || !b || b.t <= a.t) return null;
  return (b.value - a.value) / (b.t - a.t);
}

/** Adds a sample and drops those older than `windowSeconds` before it. */
export function push(samples: Sample[], sample: Sample, windowSeconds: number): Sample[] {
  const kept = samples.filter((s) => sample.t - s.t <= windowSeconds);
  kept.push(sample);
  return kept;
}

/** The catch-up's progress in [0, 1] (1 when there is nothing to read). */
export function progress(done: number, total: number): number {
  if (!(total > 0)) return 1;
  return Math.min(1, Math.max(0, done / total));
}
