// The data API's answers, by its OpenAPI document: generated/openapi.ts (web/gen-api.mjs) is
// made from it, and every answer type of the dashboard is taken from there, never written by
// hand. A request names its route ("health", "scalars/list", …: the path under /api/v1/), and
// its answer's type follows from that route's 200 JSON answer.

import type { components, paths } from "./generated/openapi";

/** The document's named schemas (Health, Run, ScalarColumns, …). */
export type Schemas = components["schemas"];

type JsonOf<Response> = Response extends { content: { "application/json": infer T } } ? T : never;
type GetOf<Path extends keyof paths> = paths[Path] extends { get: infer Op } ? Op : never;
type GetAnswer<Path extends keyof paths> = GetOf<Path> extends { responses: { 200: infer Ok } } ? JsonOf<Ok> : never;

/** The routes under /api/v1/ a GET of which answers JSON: "health", "runs", "scalars/list", … */
export type ApiRoute = {
  [Path in keyof paths]: Path extends `/api/v1/${infer Route}` ? ([GetAnswer<Path>] extends [never] ? never : Route) : never;
}[keyof paths];

/** The JSON answer of a GET of /api/v1/ROUTE, as the OpenAPI document describes it. */
export type ApiAnswer<Route extends ApiRoute> = GetAnswer<`/api/v1/${Route}`>;
