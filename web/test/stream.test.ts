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

describe("Stream", () => {
  beforeEach(() => {
    FakeSource.opened = [];
    vi.useFakeTimers();
    vi.stubGlobal("EventSource", FakeSource);
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it("delivers events and, once the browser gives up, reopens from the last event id", () => {
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
    const event = { run: "a", tag: "loss", plugin: "scalars", data_class: "scalar", step: 3, wall_time: 1, value: 0.5 };
    first.emit("series", event, "42");
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
});
