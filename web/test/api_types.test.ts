import { describe, expect, expectTypeOf, it } from "vitest";

import type { ListAnswer, Run, ScalarsAnswer } from "../src/api";
import type { ApiAnswer, ApiRoute, Schemas } from "../src/api_types";
import type { BlobStep } from "../src/views/stepper";

// The dashboard's answer types are the OpenAPI document's (src/generated/openapi.ts): these
// hold the aliases to it, and would fail to compile (npm test runs tsc) if they drifted.
describe("the answer types generated from the OpenAPI document", () => {
  it("type each JSON route's answer by its path", () => {
    expectTypeOf<ApiAnswer<"health">>().toEqualTypeOf<Schemas["Health"]>();
    expectTypeOf<ApiAnswer<"runs">>().toEqualTypeOf<Schemas["Run"][]>();
    expectTypeOf<ApiAnswer<"experiments">>().toEqualTypeOf<Schemas["Experiment"][]>();
    expectTypeOf<ApiAnswer<"data_loss">>().toEqualTypeOf<Schemas["DataLoss"][]>();
    expectTypeOf<ApiAnswer<"hparams/session_groups">>().toEqualTypeOf<Schemas["HParamsSessionGroups"]>();
    expectTypeOf<ApiAnswer<"tensors">>().toEqualTypeOf<Record<string, Record<string, Schemas["TensorDatum"][]>>>();
  });
  it("leave out the routes that answer no JSON to a GET", () => {
    expectTypeOf<"stream">().not.toExtend<ApiRoute>();
    expectTypeOf<"blob/{key}">().not.toExtend<ApiRoute>();
    expectTypeOf<"metadata/{operation}">().not.toExtend<ApiRoute>();
    expectTypeOf<"scalars">().toExtend<ApiRoute>();
  });
  it("are what the dashboard's names stand for", () => {
    expectTypeOf<Run>().toEqualTypeOf<Schemas["Run"]>();
    expectTypeOf<ListAnswer>().toEqualTypeOf<Record<string, Record<string, Schemas["TimeSeries"]>>>();
    expectTypeOf<ScalarsAnswer>().toEqualTypeOf<Record<string, Record<string, Schemas["ScalarColumns"]>>>();
    expectTypeOf<BlobStep>().toEqualTypeOf<Schemas["BlobSequenceDatum"]>();
    expect(true).toBe(true);
  });
});
