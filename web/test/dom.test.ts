import { describe, expect, it } from "vitest";

import { nameParts } from "../src/dom";

describe("nameParts", () => {
  it("cuts a name after each run of separators, losing nothing", () => {
    expect(nameParts("sweep/lr0.00814_bs64_adam_00")).toEqual(["sweep/", "lr0.", "00814_", "bs64_", "adam_", "00"]);
    expect(nameParts("a//b")).toEqual(["a//", "b"]);
    expect(nameParts("run=3:x-y")).toEqual(["run=", "3:", "x-", "y"]);
    for (const name of ["plain", "/lead", "trail/", "", "é/ü_ß"]) expect(nameParts(name).join("")).toBe(name);
  });
});
