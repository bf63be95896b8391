import { describe, expect, it } from "vitest";
import { DEFAULT_SMOOTHING, defaults, formatState, isTensorBoardLink, matcher, parseState } from "../src/url";

describe("view state in the URL", () => {
  it("round-trips", () => {
    const state = { runFilter: "lr=0\\.1", hidden: ["b", "a/x"], tagFilter: "loss", smoothing: 0.25, x: "wall" as const, logY: true, ignoreOutliers: false, wide: ["loss", "acc"] };
    const text = formatState(state);
    expect(parseState(text)).toEqual({ ...state, hidden: ["a/x", "b"], wide: ["acc", "loss"] });
  });

  it("leaves defaults out and reads an empty query as the defaults", () => {
    expect(formatState(defaults())).toBe("");
    // Outliers are ignored by default, as in TensorBoard: the URL says when they are not.
    expect(defaults().ignoreOutliers).toBe(true);
    expect(formatState({ ...defaults(), ignoreOutliers: false })).toBe("?outliers=show");
    expect(parseState("")).toEqual(defaults());
    expect(defaults().smoothing).toBe(DEFAULT_SMOOTHING);
  });

  it("keeps the other views' keys", () => {
    const text = formatState({ ...defaults(), smoothing: 0.5 }, "?view=images&smoothing=0.1&hide=a");
    expect(new URLSearchParams(text).get("view")).toBe("images");
    expect(parseState(text)).toEqual({ ...defaults(), smoothing: 0.5 });
  });

  it("ignores garbage and clamps smoothing", () => {
    expect(parseState("?smoothing=abc&x=nope&y=sqrt")).toEqual(defaults());
    expect(parseState("?smoothing=5").smoothing).toBe(0.999);
    expect(parseState("?smoothing=-1").smoothing).toBe(0);
    expect(parseState("?smoothing=0").smoothing).toBe(0);
  });

  it("filters by a case-insensitive regex, or plain text when it does not compile", () => {
    expect(matcher("^TRAIN")("train/loss")).toBe(true);
    expect(matcher("^train")("eval/loss")).toBe(false);
    expect(matcher("(")("a(b")).toBe(true);
    expect(matcher("")("anything")).toBe(true);
  });
});

describe("TensorBoard's deep links", () => {
  it("knows a TensorBoard bookmark's hash from anything else", () => {
    for (const hash of ["#scalars", "#timeseries", "#scalars&_smoothingWeight=0.9", "#pr_curves", "#debugger-v2", "#custom_scalars&tagFilter=x"]) {
      expect(isTensorBoardLink(hash)).toBe(true);
    }
    for (const hash of ["", "#", "#nothing", "#scalarsx", "#%E0%A4%A", "#runs=a"]) {
      expect(isTensorBoardLink(hash)).toBe(false);
    }
  });
});
