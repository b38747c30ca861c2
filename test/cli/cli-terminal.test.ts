import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { CLI_BIN } from "../support/cli.js";
import { getExecution, postExecution, waitForPlan, type RestPlan } from "../support/executions.js";
import { HeldWork, StageFailure } from "../support/stage-work.js";

const exec = promisify(execFile);
const WORK_STAGES = ["understand", "outline", "write", "build", "publish"];

/**
 * `project-zero run` on a real terminal: tmux gives it a pseudo-terminal and
 * lets the test read the screen as a person sees it (after every cursor
 * movement), and type into it. A private tmux server (-L) keeps this apart
 * from anyone's own sessions.
 */
describe("project-zero on a terminal", () => {
  const socket = `zero-cli-test-${process.pid}`;
  const tmux = (...args: string[]) => exec("tmux", ["-L", socket, ...args]);
  const screen = async (escapes = false) => (await tmux("capture-pane", "-p", ...(escapes ? ["-e"] : []), "-t", "cli")).stdout;
  /** The scrollback and the screen, with lines the terminal wrapped joined again (as a person reads them). */
  const everything = async () => (await tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "cli")).stdout;
  const screenShows = async (pattern: string | RegExp, timeoutMs = 20_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    let last = "";
    while (Date.now() < deadline) {
      last = await screen();
      if (typeof pattern === "string" ? last.includes(pattern) : pattern.test(last)) return last;
      await sleep(100);
    }
    throw new Error(`the screen never showed ${String(pattern)}; it shows:\n${last}`);
  };

  let app: TestApp;
  let dir: string;
  const work = new HeldWork();

  beforeAll(async () => {
    app = await startTestApp({ stageWork: work.resolver });
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-cli-tty-"));
    // A session that lives as long as the suite: killing the last session ends a tmux server, and a new session
    // asked for while it is still exiting fails ("server exited unexpectedly").
    await tmux("new-session", "-d", "-s", "keeper", "sleep 3600");
  });
  afterAll(async () => {
    await tmux("kill-server").catch(() => {});
    await app.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** Starts `project-zero <args>` in a fresh tmux window named `name`; the shell prints EXIT=<code> after it. */
  async function startOnTerminal(name: string, apiKey: string, args: string, columns = 110, rows = 30): Promise<void> {
    const script = path.join(dir, `${name}.sh`);
    await fs.writeFile(
      script,
      [
        // The shell outlives a Ctrl-C (a caught signal, so the command still gets the default) to print the exit code.
        "trap true INT",
        `export PATH='${process.env.PATH ?? ""}' ZERO_URL='${app.url}' ZERO_API_KEY='${apiKey}'`,
        `'${process.execPath}' '${CLI_BIN}' ${args}`,
        `echo "EXIT=$?"`,
        "sleep 600",
      ].join("\n"),
    );
    await tmux("kill-session", "-t", "cli").catch(() => {});
    await tmux("new-session", "-d", "-s", "cli", "-x", String(columns), "-y", String(rows), `sh ${script}`);
  }

  it("draws a progress bar and a line per stage, repaints them in place as the plan moves, and asks at the gate", async () => {
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    work.instant = new Set(["understand", "outline", "build", "publish"]);
    await startOnTerminal("run", apiKey, "run 'A website for a repair cafe in Leeds'");

    // `write` is held: two of six stages done.
    const held = await work.next();
    let shown = await screenShows("]  33%  running");
    expect(shown).toContain(`[${"█".repeat(10)}${"░".repeat(20)}]  33%  running`);
    expect(shown).toMatch(/ ✓ understand succeeded\s+attempt 1/);
    expect(shown).toMatch(/ [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] write\s+running\s+attempt 1/);
    expect(shown).toMatch(/ · publish\s+pending/);
    expect(shown.match(/plan pln_/g)).toHaveLength(1);
    // Colours too: the finished stages in green.
    expect(await screen(true)).toMatch(/\x1b\[32m✓/);

    // Halfway through writing, the write line shows it while the bar still counts finished stages;
    // the frame is redrawn, not appended.
    await held.input.progress(0.5);
    const { body } = await getExecution<{ plan: RestPlan }>(app.url, { apiKey }, held.input.planId);
    expect(body.plan.progress).toBe(33);
    expect(body.plan.stages[2]).toMatchObject({ id: "write", state: "running", progress: 50 });
    shown = await screenShows(/ write\s+running\s+attempt 1\s+50%/);
    expect(shown).toContain("]  33%  running");
    expect(shown.match(/plan pln_/g)).toHaveLength(1);
    expect(shown.match(/ write /g)).toHaveLength(1);

    // At the gate it asks; the answer is typed on the terminal.
    held.succeed();
    shown = await screenShows(`Approve "review" and publish ${held.input.planId}? [y/N]`);
    expect(shown).toContain(`[${"█".repeat(20)}${"░".repeat(10)}]  66%  awaiting_approval`);
    expect(shown).toMatch(/ ◆ review\s+awaiting_approval\s+attempt 1/);
    await tmux("send-keys", "-t", "cli", "y", "Enter");

    shown = await screenShows("EXIT=0");
    expect(shown).toContain(`[${"█".repeat(30)}] 100%  succeeded`);
    expect(shown).toMatch(/ ✓ publish\s+succeeded\s+attempt 1/);
    expect(shown).toContain(`published  ${app.url}/sites/${held.input.planId}/`);
  });

  it("keeps one frame in place on a narrow terminal when the goal is written in double-width characters", async () => {
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    work.instant = new Set(["understand", "outline", "build", "publish"]);
    const goal = "🚲 東京の自転車修理カフェのウェブサイトを作ってください。営業時間と地図も載せて、温かい雰囲気で。";
    await startOnTerminal("wide", apiKey, `run '${goal}'`, 70);
    const held = await work.next();
    await screenShows("]  33%  running");
    // The spinner repaints ten times a second; a frame that takes more rows than it counts leaves a copy behind each time.
    await sleep(1500);
    const rows = (await screen()).split("\n");
    expect(rows.filter((row) => row.includes("plan pln_"))).toHaveLength(1);
    const header = rows.findIndex((row) => row.includes("plan pln_"));
    expect(rows[header]).toContain(`plan ${held.input.planId}  website  "🚲 東京の自転`);
    expect(rows[header]).toMatch(/…$/);
    // The header did not wrap: the bar is on the very next row.
    expect(rows[header + 1]).toMatch(/^\[█+░+\] {2}33% {2}running/);
    await tmux("send-keys", "-t", "cli", "C-c");
    await screenShows("EXIT=130");
    held.succeed();
  });

  it("on a terminal shorter than the frame draws the frame cut to fit, in place, and leaves no copies in the scrollback", async () => {
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    work.instant = new Set(["understand", "outline", "build", "publish"]);
    // Header, bar, six stages and the project: nine lines, on a terminal of eight rows.
    await startOnTerminal("short", apiKey, "run 'A website for a flower shop'", 80, 8);
    const held = await work.next();
    await screenShows("]  33%  running");
    // Ten repaints a second: each one of a frame taller than the screen used to leave a copy above it.
    await sleep(1500);
    const shown = await screen();
    expect(shown).toMatch(/ [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] write\s+running\s+attempt 1/);
    expect(shown).toMatch(/ · publish\s+pending/);
    expect((await everything()).match(/\] {2}33% {2}running/g)).toHaveLength(1);

    // Once the plan rests the whole frame is left, once, for the scrollback.
    await tmux("send-keys", "-t", "cli", "C-c");
    await screenShows("EXIT=130");
    const all = await everything();
    expect(all.match(/plan pln_/g)).toHaveLength(1);
    expect(all.match(/\] {2}33% {2}running/g)).toHaveLength(1);
    expect(all).toContain(`plan ${held.input.planId}  website  "A website for a flower shop"`);
    expect(all).toContain("project    Test project (test-project)");
    held.succeed();
  });

  it("a window made narrower while following leaves no stale part of the old frame behind", async () => {
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    work.instant = new Set(["understand", "outline", "build", "publish"]);
    const goal = "A website for a bicycle repair cafe in Leeds, with opening hours, prices, a map and a page about volunteering";
    await startOnTerminal("resize", apiKey, `run '${goal}'`, 110);
    const held = await work.next();
    await screenShows("]  33%  running");
    // The header filled the row; at half the width the terminal wraps it onto two rows.
    await tmux("resize-window", "-t", "cli", "-x", "55");
    // Until the CLI has heard of the resize and drawn at the new width: a header cut to fit 55 columns.
    await screenShows(/^plan pln_.{1,45}…$/m);
    await sleep(300);
    const rows = (await screen()).split("\n");
    expect(rows.filter((row) => row.includes("plan pln_"))).toHaveLength(1);
    const header = rows.findIndex((row) => row.includes("plan pln_"));
    expect(rows[header]).toMatch(/…$/);
    expect(rows[header + 1]).toMatch(/^\[█+░+\] {2}33% {2}running/);
    await tmux("send-keys", "-t", "cli", "C-c");
    await screenShows("EXIT=130");
    held.succeed();
  });

  it("show and cancel print a plan whole, however narrow the terminal: nothing is repainted, so nothing is cut", async () => {
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    work.instant = new Set(["understand", "outline"]);
    const goal = "A website for a bicycle repair cafe in Leeds, with opening hours and a map";
    const { body } = await postExecution<{ plan: RestPlan }>(app.url, { apiKey }, { goal });
    const error = "the model answered twice without valid JSON, the second time cut short after the outline's third page";
    (await work.next()).fail(new StageFailure("writer_error", error));
    await waitForPlan(app.url, { apiKey }, body.plan.id, (plan) => plan.status === "failed");

    await startOnTerminal("show-whole", apiKey, `show ${body.plan.id}`, 50);
    await screenShows("EXIT=0");
    let all = await everything();
    expect(all).toContain(`writer_error: ${error}`);
    expect(all).toContain(`"${goal}"`);
    expect(all).not.toContain("…");

    await startOnTerminal("cancel-whole", apiKey, `cancel ${body.plan.id}`, 50);
    await screenShows("EXIT=0");
    all = await everything();
    expect(all).toContain(`"${goal}"`);
    expect(all).not.toContain("…");
  });

  it("a yes at the gate approves the draft it showed: one revised elsewhere meanwhile is not published", async () => {
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    work.instant = new Set(WORK_STAGES);
    await startOnTerminal("stale", apiKey, "run 'A website for a bike shop in York'");
    const shown = await screenShows(/Approve "review" and publish (pln_\w+)\? \[y\/N\]/);
    const planId = /publish (pln_\w+)\?/.exec(shown)![1]!;
    // Someone else asks for a new draft, which reaches the gate while the question waits.
    expect((await postExecution(app.url, { apiKey }, { planId, feedback: "Make it darker" })).status).toBe(202);
    await waitForPlan(app.url, { apiKey }, planId, (p) => p.status === "awaiting_approval" && p.revisions.length === 1);
    await tmux("send-keys", "-t", "cli", "y", "Enter");
    const refused = await screenShows(/EXIT=\d+/);
    expect(refused).toContain("EXIT=2");
    expect(refused).toContain("conflict (409): the newest draft of plan");
    // Nothing said it was approved.
    expect(refused).not.toContain("Approved");
    const { body } = await getExecution<{ plan: RestPlan }>(app.url, { apiKey }, planId);
    expect(body.plan).toMatchObject({ status: "awaiting_approval", publishedUrl: null });
  });

  it("delete asks first on a terminal: no keeps the plan, yes removes it, --yes does not ask", async () => {
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    work.instant = new Set(WORK_STAGES);
    const plans: string[] = [];
    for (const goal of ["A website for a bakery in Leeds", "A website for a florist in Bath"]) {
      const { body } = await postExecution<{ plan: RestPlan }>(app.url, { apiKey }, { goal });
      plans.push(body.plan.id);
    }
    const [kept, gone] = plans as [string, string];
    const exists = async (id: string) => (await getExecution(app.url, { apiKey }, id)).status;

    await startOnTerminal("delete-no", apiKey, `delete ${kept}`);
    await screenShows(`Delete ${kept}, its history and its files? This cannot be undone. [y/N]`);
    await tmux("send-keys", "-t", "cli", "n", "Enter");
    expect(await screenShows(/EXIT=\d+/)).toContain(`Kept ${kept}.`);
    expect(await screen()).toContain("EXIT=1");
    expect(await exists(kept)).toBe(200);

    await startOnTerminal("delete-yes", apiKey, `delete ${kept}`);
    await screenShows("This cannot be undone. [y/N]");
    await tmux("send-keys", "-t", "cli", "y", "Enter");
    expect(await screenShows(/EXIT=\d+/)).toContain(`Deleted ${kept}.`);
    expect(await screen()).toContain("EXIT=0");
    expect(await exists(kept)).toBe(404);

    await startOnTerminal("delete-flag", apiKey, `delete --yes ${gone}`);
    const shown = await screenShows(/EXIT=\d+/);
    expect(shown).toContain("EXIT=0");
    expect(shown).not.toContain("[y/N]");
    expect(await exists(gone)).toBe(404);
  });

  it("Ctrl-C stops following, leaves the plan running and says how to pick it up", async () => {
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    work.instant = new Set(["understand", "outline", "build", "publish"]);
    await startOnTerminal("interrupt", apiKey, "run 'A website for a choir in Hull'");
    const held = await work.next();
    await screenShows("]  33%  running");
    await tmux("send-keys", "-t", "cli", "C-c");
    const shown = await screenShows("EXIT=130");
    expect(shown).toContain(`Stopped following ${held.input.planId}; it keeps running on the service.`);
    expect(shown).toContain(`Follow it again with: project-zero show ${held.input.planId} --follow`);
    const { body } = await getExecution<{ plan: RestPlan }>(app.url, { apiKey }, held.input.planId);
    expect(body.plan.status).toBe("running");
    held.succeed();
  });
});
