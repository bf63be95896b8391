import { describe, expect, it } from "vitest";

import { SMALL, UPSCALED, upscale } from "../src/views/media";

describe("image upscaling", () => {
  it("scales small images up by a whole factor on their larger side", () => {
    expect(upscale(28, 28)).toBe(10); // MNIST: 280 px
    expect(upscale(16, 16)).toBe(18);
    expect(upscale(6, 100)).toBe(2); // a strip: its height decides
    expect(upscale(100, 6)).toBe(2);
  });
  it("leaves images that are not small, or not decoded, as they are", () => {
    expect(upscale(SMALL, 10)).toBe(1);
    expect(upscale(6, 200)).toBe(1);
    expect(upscale(640, 480)).toBe(1);
    expect(upscale(0, 0)).toBe(1);
  });
  it("never makes a side larger than UPSCALED", () => {
    for (let w = 1; w < SMALL; w += 7) {
      for (let h = 1; h < SMALL; h += 5) {
        const f = upscale(w, h);
        expect(Math.max(w, h) * f).toBeLessThanOrEqual(Math.max(UPSCALED, Math.max(w, h)));
        expect(f).toBeGreaterThanOrEqual(1);
      }
    }
  });
});
