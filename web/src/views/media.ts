// How big an image card shows an image: pure, so it can be tested without a page.

/** Images whose larger side is below this are scaled up (without blurring). */
export const SMALL = 128;
/** A small image is scaled up by a whole factor until its larger side would pass this. */
export const UPSCALED = 288;

/** The whole factor a small image (MNIST digits, a 6×200 strip) is scaled up by, so that its
 * larger side reaches at most UPSCALED pixels; 1 for an image that is not small, or not
 * decoded (a side of 0). */
export function upscale(width: number, height: number): number {
  const larger = Math.max(width, height);
  if (!(width > 0 && height > 0) || larger >= SMALL) return 1;
  return Math.max(1, Math.floor(UPSCALED / larger));
}
