// A run's colour depends on its name only, so it stays the same when runs come and go and
// in every view (TensorBoard's palette order is by position, which shifts as runs appear).

export const PALETTE = [
  "#ff7043", "#0077bb", "#cc3311", "#33bbee", "#ee3377", "#009988", "#bbbbbb", "#9c27b0",
  "#4caf50", "#795548", "#3f51b5", "#ffc107", "#607d8b", "#e91e63", "#00bcd4", "#8bc34a",
];

/** FNV-1a of the name, folded onto the palette. */
export function runColor(run: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < run.length; i++) {
    h ^= run.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return PALETTE[(h >>> 0) % PALETTE.length];
}

/** A group of tags: TensorBoard's, the part before the first "/" (or the tag itself). */
export function tagGroup(tag: string): string {
  const slash = tag.indexOf("/");
  return slash < 0 ? tag : tag.slice(0, slash);
}
