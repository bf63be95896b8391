// Run colours: stable and, among the runs on the page, distinct while the palette lasts.
//
// A run's preferred colour is a hash of its name (so it is the same on every visit, unlike
// TensorBoard's palette by position, which shifts as runs appear); while the page has at most
// 8 runs, only the palette's 8 most distinct colours are used. When that colour is already
// taken by another run of the page, the run takes the next free one: runs are assigned in
// name order when they are first seen together, so the same set of runs gets the same
// colours on every reload, and a colour once given never changes while the page is open.
// With more runs than colours, runs share colours (at their preferred one).
//
// One assignment for the page, whichever view it opens on: the shell assigns the
// experiment's whole run list (/api/v1/runs) as the page starts (setPageRuns), and every view
// waits for it (colorsReady) before it gives colours to the runs it lists, so a run has the
// same colour in every view (the hparams rows are linked to the scalars' lines by it).

/** 16 colours told apart at a glance (hues first, then darker and lighter ones). */
export const PALETTE = [
  "#1a73e8", "#e8710a", "#1e8e3e", "#d93025", "#9334e6", "#12b5cb", "#e52592", "#f9ab00",
  "#795548", "#5f6368", "#3f51b5", "#7cb342", "#00897b", "#827717", "#ff8a80", "#202124",
];

/** FNV-1a of the name, folded onto the palette: a run's preferred colour. */
export function preferredSlot(run: string, size = PALETTE.length): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < run.length; i++) {
    h ^= run.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % size;
}

/** Gives runs palette slots: the preferred one, else the next free one (see above). */
export class ColorAssigner {
  private readonly slots = new Map<string, number>();
  private readonly used: number[];

  constructor(readonly palette: readonly string[] = PALETTE) {
    this.used = new Array<number>(palette.length).fill(0);
  }

  /** Assigns the runs not assigned yet, in name order (call with every run first seen together). */
  assign(runs: Iterable<string>): void {
    const fresh = [...new Set(runs)].filter((r) => !this.slots.has(r)).sort();
    const n = this.palette.length;
    // While the page has at most half the palette's runs, they take colours of its first
    // half only (the most distinct hues), so a few runs never get two shades of one hue.
    const total = this.slots.size + fresh.length;
    const span = total <= n / 2 ? Math.max(1, Math.floor(n / 2)) : n;
    for (const run of fresh) {
      const preferred = preferredSlot(run, span);
      let slot = preferred;
      for (let i = 0; i < n; i++) {
        const probe = i < span ? (preferred + i) % span : i;
        if (this.used[probe] === 0) {
          slot = probe;
          break;
        }
      }
      this.slots.set(run, slot);
      this.used[slot]++;
    }
  }

  /** The run's colour (assigned now if it was not). */
  color(run: string): string {
    if (!this.slots.has(run)) this.assign([run]);
    return this.palette[this.slots.get(run)!];
  }
}

/** The page's colours, shared by every view (a run has one colour everywhere). */
export const runColors = new ColorAssigner();

let ready: Promise<void> = Promise.resolve();

/** Assigns the page's colours from the experiment's run list (the shell, as the page starts
 * or the experiment changes); a list that cannot be had leaves the views to assign. */
export function setPageRuns(runs: Promise<readonly string[]>): Promise<void> {
  ready = runs.then(
    (names) => runColors.assign(names),
    () => undefined,
  );
  return ready;
}

/** Resolves once the page's colours are assigned (views wait for it before assigning theirs). */
export function colorsReady(): Promise<void> {
  return ready;
}

/** The run's colour on this page. */
export function runColor(run: string): string {
  return runColors.color(run);
}

/** A group of tags: TensorBoard's, the part before the first "/" (or the tag itself). */
export function tagGroup(tag: string): string {
  const slash = tag.indexOf("/");
  return slash < 0 ? tag : tag.slice(0, slash);
}
