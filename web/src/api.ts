// The data API (/api/v1, relative to the page so a path prefix works) and its live stream.

import type { ApiAnswer, ApiRoute, Schemas } from "./api_types";

/** /api/v1/scalars with format=columns: the columns branch of its answer (the other one is
 * format=json's list of points). */
export type ScalarsAnswer = Extract<ApiAnswer<"scalars">, Record<string, Record<string, Schemas["ScalarColumns"]>>>;
export type ListAnswer = ApiAnswer<"scalars/list">;
export type Run = Schemas["Run"];

/** The experiment the page shows (`experiment=` on every request; null: the daemon's first);
 * the shell sets it. */
let experiment: string | null = null;
/** The experiment's run list asked for as the page started (see initialRuns). */
let firstRuns: Promise<Run[]> | null = null;

/** The experiment the page shows (null: the daemon's first). */
export function currentExperiment(): string | null {
  return experiment;
}

export function setExperiment(name: string | null): void {
  if (name !== experiment) firstRuns = null;
  experiment = name;
}

/** The URL of `tag`'s points of `runs` in a format (json or csv): every point, for a
 * download. */
export function scalarsUrl(tag: string, runs: string[], format: "json" | "csv"): string {
  const params: [string, string][] = [["plugin", "scalars"], ["tag", tag], ...runs.map((r): [string, string] => ["run", r])];
  if (experiment) params.unshift(["experiment", experiment]);
  params.push(["format", format]);
  return `api/v1/scalars?${new URLSearchParams(params).toString()}`;
}

/** The answers index.html carries for the page's first requests, by URL (boardd/api/
 * dashboard.py: a JSON data block); each is taken once, by the first request for its URL. */
const firstAnswers = readFirstAnswers();

/** The stream cursor read before those answers were made (the block's data-stream-since),
 * taken by the first stream the page opens: what was committed after the answers and before
 * the stream opened is sent to it, not missed. Empty when the page has no first answers. */
let bootSince = (typeof document !== "undefined" && document.getElementById("boardd-boot")?.dataset.streamSince) || "";

function readFirstAnswers(): Map<string, unknown> {
  const block = typeof document === "undefined" ? null : document.getElementById("boardd-boot");
  if (!block?.textContent) return new Map();
  try {
    return new Map(Object.entries(JSON.parse(block.textContent) as Record<string, unknown>));
  } catch (err) {
    console.warn("the page's first answers could not be read; asking for them", err);
    return new Map();
  }
}

async function getJson<R extends ApiRoute>(route: R, params: [string, string][] = []): Promise<ApiAnswer<R>> {
  const query = new URLSearchParams(experiment ? [["experiment", experiment], ...params] : params).toString();
  const url = `api/v1/${route}${query ? `?${query}` : ""}`;
  if (firstAnswers.has(url)) {
    const answer = firstAnswers.get(url) as ApiAnswer<R>;
    firstAnswers.delete(url);
    return answer;
  }
  const response = await fetch(url, { credentials: "same-origin" });
  if (!response.ok) throw new Error(`GET ${route}: HTTP ${response.status}`);
  return (await response.json()) as ApiAnswer<R>;
}

export const listRuns = (): Promise<Run[]> => getJson("runs");

/** The experiment's runs as the page first lists them: one request, asked by the shell as the
 * page starts (the page's colours) and reused by the view that needs it first; asked again
 * after a failure. */
export function initialRuns(): Promise<Run[]> {
  if (firstRuns === null) {
    const asked = listRuns();
    firstRuns = asked;
    asked.catch(() => {
      if (firstRuns === asked) firstRuns = null;
    });
  }
  return firstRuns;
}

// index.html carries the answers of `api/v1/runs` and `api/v1/scalars/list?plugin=scalars`
// (the first experiment's; boardd/api/dashboard.py), or preloads them: these two requests must
// keep those exact URLs.
export const listScalars = (): Promise<ListAnswer> => getJson("scalars/list", [["plugin", "scalars"]]);

/** The listing of one scalar tag (every run's), e.g. for the description of a tag first seen on
 * the stream. */
export const listScalarTag = (tag: string): Promise<ListAnswer> =>
  getJson("scalars/list", [
    ["plugin", "scalars"],
    ["tag", tag],
  ]);

export interface ScalarsQuery {
  runs?: string[];
  stepMin?: number;
  stepMax?: number;
  /** At most this many points per series... */
  downsample?: number;
  /** ...chosen uniformly, or keeping each step bucket's first, lowest, highest, last point. */
  downsampleBy?: "uniform" | "extremes";
}

/** The points of `tag` or tags (every run's, or `runs`'), in a step range, downsampled. */
export function readScalars(tag: string | string[], opts: ScalarsQuery = {}): Promise<ScalarsAnswer> {
  const params: [string, string][] = [["plugin", "scalars"]];
  for (const t of typeof tag === "string" ? [tag] : tag) params.push(["tag", t]);
  params.push(["format", "columns"]);
  for (const run of opts.runs ?? []) params.push(["run", run]);
  if (opts.stepMin !== undefined) params.push(["step_min", String(opts.stepMin)]);
  if (opts.stepMax !== undefined) params.push(["step_max", String(opts.stepMax)]);
  if (opts.downsample !== undefined) params.push(["downsample", String(opts.downsample)]);
  if (opts.downsampleBy !== undefined) params.push(["downsample_by", opts.downsampleBy]);
  // format=columns: the answer is the columns branch (a type cannot tie it to the parameter).
  return getJson("scalars", params) as Promise<ScalarsAnswer>;
}

// The stream's events: their data's schemas in the OpenAPI document.
export type SeriesEvent = Schemas["StreamSeriesEvent"];
export type RunEvent = Schemas["StreamRunEvent"];

export interface StreamHandlers {
  series(event: SeriesEvent): void;
  run(event: RunEvent): void;
  reset(): void;
  state(connected: boolean): void;
}

function takeBootSince(): string {
  // The cursor covers every experiment, as the stream of the first experiment's page does
  // (no experiment=); a stream of another experiment starts where it opens.
  const since = experiment ? "" : bootSince;
  bootSince = "";
  return since;
}

/** The daemon's first experiment's name (the one the data API answers without
 * `experiment=`), asked once; null if the daemon has none (asked again after a failure). */
let firstName: Promise<string | null> | null = null;

export function firstExperimentName(): Promise<string | null> {
  if (firstName === null) {
    const asked = getJson("experiments").then((list) => list[0]?.id ?? null);
    firstName = asked.catch(() => {
      firstName = null;
      return null;
    });
  }
  return firstName;
}

/** /api/v1/stream, kept open: EventSource resumes by itself with Last-Event-ID after a
 * dropped connection; when it gives up (an HTTP error while the daemon restarts), a new one
 * starts after a second from the last event id (`since=`), so nothing is missed. The page's
 * first stream starts from the cursor its first answers were made at.
 *
 * Only the shown experiment's events reach the handlers, in their order: a stream opened
 * without `experiment=` (the page shows the daemon's first) carries every experiment's, and a
 * view must not take another experiment's run for its own. */
export class Stream {
  private source: EventSource | null = null;
  private lastId = takeBootSince();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  /** The experiment the page shows as the stream opens (null: the daemon's first). */
  private readonly experiment = experiment;
  /** Its name, asked with the first event (not before: the page's first requests are its
   * charts'); null: every experiment's events are delivered. */
  private shown: Promise<string | null> | null = null;

  constructor(private readonly handlers: StreamHandlers) {
    this.open();
  }

  /** Calls ``deliver`` once the shown experiment is known, if the event is of it. */
  private ofShown(name: string, deliver: () => void): void {
    this.shown ??= this.experiment !== null ? Promise.resolve(this.experiment) : firstExperimentName();
    void this.shown.then((shown) => {
      if (!this.closed && (shown === null || name === shown)) deliver();
    });
  }

  private open(): void {
    const q = new URLSearchParams();
    if (this.experiment) q.set("experiment", this.experiment);
    if (this.lastId) q.set("since", this.lastId);
    const url = `api/v1/stream${q.size ? `?${q}` : ""}`;
    const source = new EventSource(url, { withCredentials: true });
    this.source = source;
    const track = (e: MessageEvent): void => {
      if (e.lastEventId) this.lastId = e.lastEventId;
    };
    source.addEventListener("open", () => this.handlers.state(true));
    source.addEventListener("series", (e) => {
      track(e);
      const event = JSON.parse(e.data) as SeriesEvent;
      this.ofShown(event.experiment, () => this.handlers.series(event));
    });
    source.addEventListener("run", (e) => {
      track(e);
      const event = JSON.parse(e.data) as RunEvent;
      this.ofShown(event.experiment, () => this.handlers.run(event));
    });
    source.addEventListener("reset", (e) => {
      track(e);
      const event = JSON.parse(e.data) as Schemas["StreamResetEvent"];
      this.ofShown(event.experiment, () => this.handlers.reset());
    });
    source.addEventListener("error", () => {
      this.handlers.state(false);
      if (source.readyState === EventSource.CLOSED && !this.closed) {
        source.close();
        this.timer = setTimeout(() => this.open(), 1000);
      }
    });
  }

  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.source?.close();
  }
}
