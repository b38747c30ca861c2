import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { PlanSchema, type Plan } from "../../gen/zero/v1/execution_pb.js";
import { changedLines, LivePlanView } from "../../src/cli/live-plan-view.js";
import { planLines, progressBar, stageLine, type PlanStyle } from "../../src/cli/plan-view.js";
import type { Terminal } from "../../src/cli/terminal.js";

interface PlanExtras {
  status?: string;
  project?: { id: string; name: string; slug: string };
  warning?: string;
  previewUrl?: string;
}

const STAGES = ["understand", "outline", "write", "build", "review", "publish"];

/** A website plan as the service sends it, with the first `done` stages succeeded and the next in `state`. */
function plan(done: number, state = "running", extra: PlanExtras = {}): Plan {
  return create(PlanSchema, {
    id: "pln_0123456789abcdefghij",
    goal: "A website for a neighbourhood bicycle repair cafe",
    outcome: "website",
    status: state === "running" ? "running" : state,
    progress: Math.floor((done / STAGES.length) * 100),
    resumable: state !== "running",
    stages: STAGES.map((id, index) => ({
      id,
      title: id,
      state: index < done ? "succeeded" : index === done ? state : "pending",
      attempts: index <= done ? 1 : 0,
    })),
    ...extra,
  });
}

const plain: PlanStyle = { ansi: false, color: false, columns: 100, baseUrl: "http://127.0.0.1:8080" };
const tty: PlanStyle = { ansi: true, color: true, columns: 100, baseUrl: "http://127.0.0.1:8080" };

function fakeTerminal(ansi: boolean): Terminal & { output: string; resize(columns: number): void } {
  const listeners = new Set<() => void>();
  const terminal = {
    output: "",
    ansi,
    color: ansi,
    columns: 100,
    rows: 30,
    write: (text: string) => {
      terminal.output += text;
    },
    onResize: (listener: () => void) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    resize: (columns: number) => {
      terminal.columns = columns;
      for (const listener of listeners) listener();
    },
  };
  return terminal;
}

describe("progress bar", () => {
  it("fills in proportion, in ASCII without a terminal and in blocks on one", () => {
    expect(progressBar(0, 10, true)).toBe("[----------]   0%");
    expect(progressBar(50, 10, true)).toBe("[#####-----]  50%");
    expect(progressBar(100, 10, false)).toBe("[██████████] 100%");
    expect(progressBar(33, 30, false)).toBe(`[${"█".repeat(10)}${"░".repeat(20)}]  33%`);
  });

  it("clamps what it cannot draw", () => {
    expect(progressBar(140, 4, true)).toBe("[####] 100%");
    expect(progressBar(-5, 4, true)).toBe("[----]   0%");
  });
});

describe("a plan as lines", () => {
  it("shows the header, the bar with the status, and a line per stage with state and attempts", () => {
    const lines = planLines(plan(2), plain);
    expect(lines[0]).toBe('plan pln_0123456789abcdefghij  website  "A website for a neighbourhood bicycle repair cafe"');
    expect(lines[1]).toBe("[##########--------------------]  33%  running");
    expect(lines.slice(2, 8)).toEqual([
      "  understand succeeded          attempt 1",
      "  outline    succeeded          attempt 1",
      "  write      running            attempt 1",
      "  build      pending",
      "  review     pending",
      "  publish    pending",
    ]);
    expect(lines.join("\n")).not.toContain("\x1b");
  });

  it("names a failed stage's error and its attempts", () => {
    const failed = plan(2, "failed", { status: "failed" });
    failed.stages[2]!.attempts = 2;
    failed.stages[2]!.error = { $typeName: "zero.v1.StageError", type: "writer_error", message: "the model answered twice without valid JSON" };
    expect(stageLine(failed.stages[2]!, plain)).toBe("  write      failed             attempt 2  writer_error: the model answered twice without valid JSON");
    expect(planLines(failed, plain)[1]).toBe("[##########--------------------]  33%  failed");
  });

  it("shows how far a running stage has got on its line, while the bar counts finished stages", () => {
    const writing = plan(2);
    writing.stages[2]!.progress = 50;
    const lines = planLines(writing, plain);
    expect(lines[1]).toBe("[##########--------------------]  33%  running");
    expect(lines[4]).toBe("  write      running            attempt 1  50%");
    // Without a terminal, the stage's progress is a change worth a line; the unchanged bar is not repeated.
    expect(changedLines(plan(2), writing, plain)).toEqual(["  write      running            attempt 1  50%"]);
  });

  it("adds the project, the warning and URLs made absolute against the service", () => {
    const atGate = plan(4, "awaiting_approval", {
      status: "awaiting_approval",
      project: { id: "prj_1", name: "Repair Cafe", slug: "repair-cafe" },
      warning: "Written offline",
      previewUrl: "/preview/pln_0123456789abcdefghij/",
    });
    const lines = planLines(atGate, plain);
    expect(lines).toContain("  project    Repair Cafe (repair-cafe)");
    expect(lines).toContain("  warning    Written offline");
    expect(lines).toContain("  preview    http://127.0.0.1:8080/preview/pln_0123456789abcdefghij/");
    expect(lines).toContain("  review     awaiting_approval  attempt 1");
  });

  it("on a terminal draws icons, a spinner and colours, and keeps lines within the width", () => {
    const lines = planLines(plan(2), { ...tty, frame: 3 });
    expect(lines[1]).toContain("█".repeat(10));
    expect(lines[2]).toBe("  \x1b[32m✓ \x1b[39munderstand \x1b[32msucceeded        \x1b[39m\x1b[2m  attempt 1\x1b[22m");
    expect(lines[4]).toContain("⠸ ");
    const narrow = planLines(plan(1), { ...plain, columns: 30 });
    for (const text of narrow) expect([...text].length).toBeLessThanOrEqual(30);
    expect(narrow[0]).toMatch(/…$/);
  });
});

describe("following a plan", () => {
  it("without a terminal prints the whole plan once, then only what changed", () => {
    const first = plan(1);
    const second = plan(2);
    expect(changedLines(first, second, plain)).toEqual([
      "  outline    succeeded          attempt 1",
      "  write      running            attempt 1",
      "[##########--------------------]  33%  running",
    ]);
    expect(changedLines(second, second, plain)).toEqual([]);

    const terminal = fakeTerminal(false);
    const view = new LivePlanView(terminal, plain);
    view.update(first);
    view.update(second);
    view.settle();
    const lines = terminal.output.trimEnd().split("\n");
    expect(lines).toHaveLength(8 + 3);
    expect(terminal.output).not.toContain("\x1b");
  });

  it("on a terminal repaints the frame in place: back up over its lines, clear and draw each, clear what is left", () => {
    const terminal = fakeTerminal(true);
    const view = new LivePlanView(terminal, tty);
    view.update(plan(1));
    const firstFrame = terminal.output;
    expect(firstFrame.split("\n")).toHaveLength(9);
    view.update(plan(2));
    const repaint = terminal.output.slice(firstFrame.length);
    expect(repaint.startsWith("\x1b[8F\x1b[2K")).toBe(true);
    expect(repaint.match(/\x1b\[2K/g)).toHaveLength(8);
    expect(repaint.endsWith("\n\x1b[0J")).toBe(true);
    expect(repaint).toContain("33%");
    view.settle();
    // After settling, the next frame starts below the old one instead of over it.
    const settled = terminal.output.length;
    view.update(plan(3));
    const next = terminal.output.slice(settled);
    expect(next).not.toMatch(/^\x1b\[\d+F/);
    expect(next).toMatch(/^\x1b\[2K\x1b\[2mplan /);
    view.settle();
  });

  it("after the window's width changes, draws the frame again from the screen's top, whatever a repaint at the old width left above", () => {
    const terminal = fakeTerminal(true);
    const view = new LivePlanView(terminal, tty);
    view.update(plan(1));
    // A repaint between the terminal's resize and the process learning of it counts the old frame's rows at the
    // old width: on a terminal that rewrapped them, part of the old frame is left above the new one.
    view.update(plan(2));
    const before = terminal.output.length;
    terminal.resize(50);
    const healed = terminal.output.slice(before);
    expect(healed.startsWith("\x1b[H\x1b[2J\x1b[2K")).toBe(true);
    expect(healed.match(/plan /g)).toHaveLength(1);
    // Then repaints climb as before, over the rows the frame takes at the new width.
    const after = terminal.output.length;
    view.update(plan(2));
    expect(terminal.output.slice(after)).toMatch(/^\x1b\[\d+F\x1b\[2K/);
    view.settle();
    // A settled view leaves the screen alone when the window changes.
    const settled = terminal.output.length;
    terminal.resize(80);
    expect(terminal.output.length).toBe(settled);
  });
});
