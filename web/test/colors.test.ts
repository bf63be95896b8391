import { describe, expect, it } from "vitest";
import { ColorAssigner, PALETTE, preferredSlot, runColor, tagGroup } from "../src/colors";

describe("run colours", () => {
  it("are distinct among as many runs as the palette has colours", () => {
    const runs = Array.from({ length: PALETTE.length }, (_, i) => `run_${String(i).padStart(2, "0")}`);
    // The hash alone collides on these names (which is why slots are assigned).
    const preferred = new Set(runs.map((r) => preferredSlot(r)));
    expect(preferred.size).toBeLessThan(runs.length);
    const colors = new ColorAssigner();
    colors.assign(runs);
    expect(new Set(runs.map((r) => colors.color(r))).size).toBe(runs.length);
  });

  it("are the same for the same set of runs, whatever order they are listed in", () => {
    const a = new ColorAssigner();
    const b = new ColorAssigner();
    const runs = ["eval", "lr_0.1", "lr_0.01", "baseline", "x"];
    a.assign(runs);
    b.assign([...runs].reverse());
    for (const r of runs) expect(a.color(r)).toBe(b.color(r));
  });

  it("never change once given, and a run alone gets its preferred colour", () => {
    const colors = new ColorAssigner();
    colors.assign(["a", "b"]);
    const before = [colors.color("a"), colors.color("b")];
    colors.assign(["0", "c", "d"]);
    expect([colors.color("a"), colors.color("b")]).toEqual(before);
    expect(new ColorAssigner().color("solo")).toBe(PALETTE[preferredSlot("solo", PALETTE.length / 2)]);
    expect(runColor("run_00")).toMatch(/^#[0-9a-f]{6}$/);
  });

  it("take the most distinct half of the palette while the runs fit in it", () => {
    const colors = new ColorAssigner();
    const runs = ["lr=0.1", "lr=0.03", "lr=0.01", "lr=0.003", "a", "b", "c", "d"];
    colors.assign(runs);
    const first = new Set(PALETTE.slice(0, PALETTE.length / 2));
    for (const r of runs) expect(first.has(colors.color(r))).toBe(true);
  });

  it("share colours only past the palette's size", () => {
    const colors = new ColorAssigner(["#000000", "#ffffff"]);
    colors.assign(["a", "b", "c"]);
    expect(new Set(["a", "b"].map((r) => colors.color(r))).size).toBe(2);
    expect(colors.color("c")).toMatch(/^#/);
  });
});

describe("tag groups", () => {
  it("groups tags by the part before the first slash", () => {
    expect(tagGroup("train/loss/x")).toBe("train");
    expect(tagGroup("loss")).toBe("loss");
  });
});
