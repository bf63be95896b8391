import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Stream, type SeriesEvent } from "../src/api";

/** A stand-in for the browser's EventSource: records what was opened, lets a test emit. */
class FakeSource {
  static CLOSED = 2;
  static opened: FakeSource[] = [];
  readyState = 0;
  closed = false;
  private listeners = new Map<string, ((e: unknown) => void)[]>();
  constructor(readonly url: string) {
    FakeSource.opened.push(this);
  }
  addEventListener(type: string, fn: (e: unknown) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), fn]);
  }
  emit(type: string, data?: unknown, lastEventId = ""): void {
    for (const fn of this.listeners.get(type) ?? []) fn({ data: JSON.stringify(data), lastEventId });
  }
  close(): void {
    this.closed = true;
  }
}

/** Lets the promises already settled run their callbacks. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

describe("Stream", () => {
  beforeEach(() => {
    FakeSource.opened = [];
    vi.useFakeTimers();
    vi.stubGlobal("EventSource", FakeSource);
    // The daemon's experiments: "exp" is the first (the one the page shows without exp=).
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => ({ ok: true, json: async () => [{ id: "exp", name: "exp" }, { id: "other", name: "other" }] })),
    );
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it("delivers events and, once the browser gives up, reopens from the last event id", async () => {
    const got: SeriesEvent[] = [];
    const states: boolean[] = [];
    const stream = new Stream({
      series: (e) => got.push(e),
      run: () => {},
      reset: () => {},
      state: (s) => states.push(s),
    });
    const first = FakeSource.opened[0];
    expect(first.url).toBe("api/v1/stream");
    first.emit("open");
    const event = { experiment: "exp", run: "a", tag: "loss", plugin: "scalars", data_class: "scalar", step: 3, wall_time: 1, value: 0.5, generation: 1 };
    first.emit("series", event, "42");
    await settle();
    expect(got).toEqual([event]);

    // A dropped connection the browser retries by itself (Last-Event-ID): nothing to do.
    first.emit("error");
    expect(FakeSource.opened.length).toBe(1);
    // An HTTP error (the daemon restarting): the browser closes it; a new one after a second.
    first.readyState = FakeSource.CLOSED;
    first.emit("error");
    expect(first.closed).toBe(true);
    vi.advanceTimersByTime(999);
    expect(FakeSource.opened.length).toBe(1);
    vi.advanceTimersByTime(1);
    expect(FakeSource.opened.map((s) => s.url)).toEqual(["api/v1/stream", "api/v1/stream?since=42"]);
    expect(states).toEqual([true, false, false]);
    stream.close();
    expect(FakeSource.opened[1].closed).toBe(true);
  });

  it("delivers only the shown experiment's events, in their order", async () => {
    const got: string[] = [];
    let resets = 0;
    const stream = new Stream({
      series: (e) => got.push(`${e.experiment}/${e.run}`),
      run: (e) => got.push(`run ${e.experiment}/${e.run}`),
      reset: () => (resets += 1),
      state: () => {},
    });
    const source = FakeSource.opened[0];
    const point = { tag: "loss", plugin: "scalars", data_class: "scalar", step: 1, wall_time: 1, value: 1, generation: 1 };
    // Before the page knows which experiment is the first: held, then filtered in order.
    source.emit("series", { ...point, experiment: "other", run: "b" });
    source.emit("series", { ...point, experiment: "exp", run: "a" });
    source.emit("run", { experiment: "other", run: "b", change: "created", generation: 1 });
    source.emit("run", { experiment: "exp", run: "c", change: "created", generation: 2 });
    source.emit("reset", { experiment: "other", generation: 0 });
    await settle();
    expect(got).toEqual(["exp/a", "run exp/c"]);
    expect(resets).toBe(0);
    source.emit("reset", { experiment: "exp", generation: 0 });
    await settle();
    expect(resets).toBe(1);
    stream.close();
  });
});
