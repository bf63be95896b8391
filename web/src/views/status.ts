// Status: the daemon's health per experiment (its ingest state, catch-up progress, lag,
// ingest rate, last commit, errors, unreadable paths, the watcher) and the data-loss records
// of the experiment shown (file, offset, length, reason). /api/v1/health is asked every
// second while the view is open (it is not on the stream); data loss every two seconds (the
// browser revalidates its copy by ETag: an unchanged answer is a bodiless 304).
//
// Contract for tests: each experiment's block carries data-experiment, data-state,
// data-progress (0..1) and data-generation; the data-loss table data-records; each of its
// rows data-run, data-file, data-offset, data-length and data-reason.

import type { Schemas } from "../api_types";
import { api, el, getApi, notice, type ViewContext, type ViewDef } from "./common";
import { formatBytes, formatSeconds, progress, push, rate, type Sample } from "./format";

/** An experiment of /api/v1/health (with the daemon's live ingest state, when it writes it). */
type ExperimentHealth = Schemas["Health"]["experiments"][number];

const HEALTH_EVERY_MS = 1000;
const DATA_LOSS_EVERY_MS = 2000;
const RATE_WINDOW_S = 10;

export const statusView: ViewDef = {
  id: "status",
  title: "Status",
  mount(host, ctx) {
    return new StatusView(host, ctx);
  },
};

class StatusView {
  private alive = true;
  private timers: ReturnType<typeof setTimeout>[] = [];
  private readonly bytes = new Map<string, Sample[]>();
  private readonly commits = new Map<string, Sample[]>();
  private readonly daemon = el("div", { class: "daemon-line" });
  private readonly experiments = el("div", { class: "experiments" });
  private readonly losses = el("div", { class: "losses" });

  constructor(
    private readonly host: HTMLElement,
    private readonly ctx: ViewContext,
  ) {
    host.append(
      el(
        "div",
        { class: "view-body status-view" },
        el("h2", {}, "Daemon"),
        this.daemon,
        el("h2", {}, "Ingest"),
        this.experiments,
        el("h2", {}, "Data loss"),
        el("p", { class: "hint" }, "Byte ranges of event files that could not be read (the rest of each file was read)."),
        this.losses,
      ),
    );
    this.experiments.append(notice("asking the daemon…"));
    this.poll(() => this.health(), HEALTH_EVERY_MS);
    this.poll(() => this.dataLoss(), DATA_LOSS_EVERY_MS);
  }

  /** Runs `fn` now and again `every` ms after each run ends (failures shown, then retried). */
  private poll(fn: () => Promise<void>, every: number): void {
    const tick = (): void => {
      fn()
        .catch((err: unknown) => {
          if (this.alive) this.daemon.replaceChildren(el("span", { class: "bad" }, `the daemon does not answer: ${String(err)}`));
        })
        .finally(() => {
          if (this.alive) this.timers.push(setTimeout(tick, every));
        });
    };
    tick();
  }

  private async health(): Promise<void> {
    const h = await getApi("health");
    if (!this.alive) return;
    const now = Date.now() / 1000;
    this.daemon.replaceChildren(
      el("span", { class: `badge ${h.status === "ok" ? "good" : "bad"}`, "data-status": h.status }, h.status),
      ` boardd ${h.version} · up ${formatSeconds(h.uptime_seconds)} · cache ${h.cache.entries} answers, ${formatBytes(h.cache.bytes)}, hit rate ${(100 * h.cache.hit_rate).toFixed(0)} %`,
    );
    this.experiments.replaceChildren(...h.experiments.map((e) => this.experimentBlock(e, now)));
  }

  private experimentBlock(e: ExperimentHealth, now: number): HTMLElement {
    const done = e.bytes_done ?? 0;
    const total = e.bytes_total ?? 0;
    const fraction = progress(done, total);
    const bytes = push(this.bytes.get(e.name) ?? [], { t: now, value: done }, RATE_WINDOW_S);
    this.bytes.set(e.name, bytes);
    const commits = push(this.commits.get(e.name) ?? [], { t: now, value: e.generation ?? 0 }, RATE_WINDOW_S);
    this.commits.set(e.name, commits);
    const byteRate = rate(bytes);
    const commitRate = rate(commits);
    const state = e.state ?? "served";
    const bar = el("div", { class: "bar" });
    const fill = el("div", { class: "fill" });
    fill.style.width = `${(100 * fraction).toFixed(1)}%`;
    bar.append(fill);
    const facts: [string, string][] = [
      ["logdir", e.logdir],
      ["read", `${formatBytes(done)} of ${formatBytes(total)} (${(100 * fraction).toFixed(1)} %)`],
      ["lag", e.lag_seconds === null || e.lag_seconds === undefined ? "up to date" : formatSeconds(e.lag_seconds)],
      ["ingest rate", `${byteRate === null ? "–" : `${formatBytes(Math.max(0, byteRate))}/s`} · ${commitRate === null ? "–" : `${Math.max(0, commitRate).toFixed(1)} commits/s`}`],
      ["last commit", e.last_commit ? `${formatSeconds(Math.max(0, now - e.last_commit))} ago (generation ${e.generation ?? "–"})` : "none yet"],
      ["watching", `${e.watch_mode ?? "–"}${e.watch_problem ? ` · ${e.watch_problem}` : ""}${e.watch_overflows ? ` · ${e.watch_overflows} overflows` : ""}`],
      ["data loss", e.data_loss === null ? "–" : `${e.data_loss} record${e.data_loss === 1 ? "" : "s"}`],
    ];
    if (e.error) facts.push(["error", `${e.error}${e.retries ? ` (${e.retries} failed passes; next try in ${formatSeconds(e.retry_in_seconds)})` : ""}`]);
    const block = el(
      "section",
      {
        class: "card experiment",
        "data-experiment": e.name,
        "data-state": state,
        "data-progress": String(fraction),
        "data-generation": String(e.generation ?? ""),
      },
      el("h3", {}, e.name, " ", el("span", { class: `badge state-${state}` }, state.replace("_", " "))),
      bar,
      el("dl", {}, ...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", { class: k === "error" ? "bad" : "" }, v)])),
    );
    if (e.unreadable?.length) {
      block.append(
        el("h4", {}, "Skipped for now (cannot be read)"),
        el("ul", { class: "unreadable" }, ...e.unreadable.map((u) => el("li", { "data-path": u.path }, el("code", {}, u.path), `: ${u.reason}`))),
      );
    }
    return block;
  }

  private async dataLoss(): Promise<void> {
    const records = await api(this.ctx, "data_loss");
    if (!this.alive) return;
    if (records.length === 0) {
      this.losses.replaceChildren(el("p", { class: "good-note", "data-records": "0" }, "None: every byte read so far was readable."));
      return;
    }
    const head = el("tr", {}, ...["run", "file", "offset", "length", "reason", "recorded"].map((h) => el("th", {}, h)));
    const rows = records.map((r) =>
      el(
        "tr",
        {
          "data-run": r.run,
          "data-file": r.file,
          "data-offset": String(r.offset),
          "data-length": String(r.length),
          "data-reason": r.reason,
        },
        el("td", {}, r.run),
        el("td", {}, el("code", {}, r.file)),
        el("td", { class: "num" }, String(r.offset)),
        el("td", { class: "num" }, r.length ? formatBytes(r.length) : "a record"),
        el("td", {}, r.reason),
        el("td", {}, new Date(r.time * 1000).toLocaleString()),
      ),
    );
    this.losses.replaceChildren(el("table", { class: "loss-table", "data-records": String(records.length) }, el("thead", {}, head), el("tbody", {}, ...rows)));
  }

  unmount(): void {
    this.alive = false;
    for (const t of this.timers) clearTimeout(t);
    this.host.replaceChildren();
  }
}
