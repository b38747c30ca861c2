import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { runCli, startCli } from "../support/cli.js";
import { getExecution, postExecution, type RestPlan, waitForPlan } from "../support/executions.js";
import { HeldWork, StageFailure } from "../support/stage-work.js";
import { unusedPort } from "../support/ports.js";
import { answerWhileStarting } from "../../src/server/http-handler.js";

// The command as people and scripts run it: its own process, pipes for
// stdin/stdout (not a terminal), against the real service on port 0.

const WORK_STAGES = ["understand", "outline", "write", "build", "assemble", "publish"];

describe("project-zero against a running service", () => {
  let app: TestApp;
  const work = new HeldWork();
  let env: Record<string, string>;
  let key: string;

  beforeAll(async () => {
    app = await startTestApp({ stageWork: work.resolver });
    key = (await createAccountWithKey(app, ["read", "build"])).apiKey;
    env = { ZERO_URL: app.url, ZERO_API_KEY: key };
  });
  afterAll(() => app.close());
  beforeEach(() => {
    work.instant = new Set(WORK_STAGES);
  });

  const planOf = async (id: string) => (await getExecution<{ plan: RestPlan }>(app.url, { apiKey: key }, id)).body.plan;
  const planIdIn = (text: string) => /pln_[A-Za-z0-9]+/.exec(text)?.[0] ?? "";
  /** Gives a plan built by the test's stage work the files a real build leaves, so it has something to download. */
  const makeDownloadable = async (id: string) => {
    await app.artifacts.put(`index/plans/${id}/project.json`, JSON.stringify({ id: `prj_${id.slice(4, 12)}`, name: "Test project", slug: "test-project" }));
    await app.artifacts.put(`preview/${id}/index.html`, "<!doctype html><title>Test project</title>");
  };

  it("runs a website goal to the gate, approves it and prints where it is published", async () => {
    const { code, stdout, stderr } = await runCli(["run", "A website for a neighbourhood bicycle repair cafe", "--approve"], env);
    expect(stderr).toMatch(/^Created pln_\w+ \(website\)/);
    expect(code).toBe(0);
    const id = planIdIn(stderr);

    // A line per stage as it changes, and the bar as the plan moves.
    expect(stdout).toContain(`plan ${id}  website  "A website for a neighbourhood bicycle repair cafe"`);
    expect(stdout).toContain("  review     awaiting_approval  attempt 1");
    expect(stdout).toContain("[####################----------]  66%  awaiting_approval");
    expect(stderr).toContain('Approved "review"; going on.');
    expect(stdout).toContain("  publish    succeeded          attempt 1");
    expect(stdout).toContain("[##############################] 100%  succeeded");
    expect(stdout).toContain(`  preview    ${app.url}/preview/${id}/`);
    expect(stdout).toContain(`Done: ${id} succeeded. ${app.url}/sites/${id}/`);
    // Not a terminal: plain text only.
    expect(stdout + stderr).not.toContain("\x1b");
    expect((await planOf(id)).status).toBe("succeeded");
  });

  it("history prints what happened to the plan, one event a line, oldest first; --json as one object", async () => {
    const first = await runCli(["run", "A website for a model railway club", "--approve"], env);
    expect(first.code).toBe(0);
    const id = planIdIn(first.stderr + first.stdout);
    const text = await runCli(["history", id], env);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\S+Z {2}created$/);
    expect(lines[1]).toMatch(/ {2}stage_started {2}understand \(attempt 1\)$/);
    expect(lines.at(-1)).toMatch(/ {2}stage_succeeded {2}publish \(attempt 1\)$/);
    const json = await runCli(["history", id, "--json"], env);
    const { events } = JSON.parse(json.stdout) as { events: { type: string; stage: string | null; attempt: number | null }[] };
    expect(events.map((e) => e.type)).toHaveLength(lines.length);
    expect(events[0]).toMatchObject({ type: "created", stage: null, attempt: null });
    const missing = await runCli(["history", "pln_doesNotExist000000"], env);
    expect(missing.code).toBe(4);
  });

  it("cancel stops a running plan and prints it cancelled; delete removes it (show is then 4)", async () => {
    work.instant = new Set(["understand", "outline"]);
    const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: key }, { goal: "A website for a village bell ringers' society" });
    const id = created.body.plan.id;
    const held = await work.next();
    expect(held.input.planId).toBe(id);

    const cancelled = await runCli(["cancel", id], env);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toContain(`plan ${id}`);
    expect(cancelled.stdout).toMatch(/write\s+cancelled/);
    expect((await planOf(id)).status).toBe("cancelled");
    const json = await runCli(["cancel", id, "--json"], env);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { plan: { status: string } }).plan.status).toBe("cancelled");

    const deleted = await runCli(["delete", id], env);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toContain(`Deleted ${id}.`);
    expect((await runCli(["show", id], env)).code).toBe(4);
    expect((await runCli(["delete", id], env)).code).toBe(4);
    expect((await runCli(["cancel", id], env)).code).toBe(4);
  });

  it("cancel or revise of a succeeded plan is refused with the service's conflict as an invalid request (exit 2, not 1)", async () => {
    const first = await runCli(["run", "A website for a seed library", "--approve"], env);
    expect(first.code).toBe(0);
    const id = planIdIn(first.stderr + first.stdout);
    const refused = await runCli(["cancel", id], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^project-zero: conflict \(409\): .*already succeeded.*\n$/);
    const revised = await runCli(["revise", id, "Make it calmer"], env);
    expect(revised.code).toBe(2);
    expect(revised.stderr).toMatch(/^project-zero: conflict \(409\): /);
    expect((await planOf(id)).status).toBe("succeeded");
  });

  it("show --follow of a cancelled plan exits 1: it ended without its result", async () => {
    work.instant = new Set(["understand"]);
    const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: key }, { goal: "A website for a village cider press" });
    const id = created.body.plan.id;
    await work.next();
    expect((await runCli(["cancel", id], env)).code).toBe(0);
    const followed = await runCli(["show", id, "--follow"], env);
    expect(followed.code).toBe(1);
    expect(followed.stderr).toBe(`Plan ${id} cancelled\n`);
    expect((await runCli(["show", id], env)).code).toBe(0);
  });

  it("stops at the gate without --approve when nobody can be asked, then resume passes it", async () => {
    const first = await runCli(["run", "A website for a community choir"], env);
    expect(first.code).toBe(6);
    const id = planIdIn(first.stderr);
    expect(first.stderr).toContain(`Approve and publish with: project-zero resume ${id} --approve review`);
    expect((await planOf(id)).status).toBe("awaiting_approval");

    const resumed = await runCli(["resume", id, "--approve", "review"], env);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain("[##############################] 100%  succeeded");
    expect((await planOf(id)).status).toBe("succeeded");
  });

  it("revise sends feedback at the gate and follows the new draft live back to the gate", async () => {
    const first = await runCli(["run", "A website for a community garden"], env);
    expect(first.code).toBe(6);
    const id = planIdIn(first.stderr);
    const revised = await runCli(["revise", id, "Make", "it", "calmer"], env);
    expect(revised.code).toBe(6);
    expect(revised.stderr).toContain(`Revising ${id} (revision 1)`);
    expect(revised.stderr).toContain(`Approve and publish with: project-zero resume ${id} --approve review`);
    const plan = await planOf(id);
    expect(plan.status).toBe("awaiting_approval");
    expect(plan.revisions).toMatchObject([{ number: 1, feedback: "Make it calmer" }]);
    const refused = await runCli(["revise", id], env);
    expect(refused.code).toBe(2);
  });

  it("with --json prints one plan per line as it changes", async () => {
    const { code, stdout } = await runCli(["run", "A website for a tool library", "--approve", "--json"], env);
    expect(code).toBe(0);
    const plans = stdout
      .trim()
      .split("\n")
      .map((text) => (JSON.parse(text) as { plan: RestPlan }).plan);
    expect(plans.length).toBeGreaterThanOrEqual(2);
    expect(plans.map((p) => p.status)).toContain("awaiting_approval");
    const last = plans.at(-1)!;
    expect(last).toMatchObject({ status: "succeeded", progress: 100, outcome: "website", goal: "A website for a tool library" });
    expect(last.stages.map((s) => s.state)).toEqual(Array(6).fill("succeeded"));

    const listed = await runCli(["plans", "--json"], env);
    expect(listed.code).toBe(0);
    const { plans: recent } = JSON.parse(listed.stdout) as { plans: RestPlan[] };
    expect(recent[0]!.id).toBe(last.id);
  });

  it("pages back through plans with --before and lists every one with --all", async () => {
    const account = await createAccountWithKey(app, ["read", "build"]);
    const own = { ZERO_URL: app.url, ZERO_API_KEY: account.apiKey };
    const created: string[] = [];
    for (let i = 1; i <= 12; i++) {
      const answer = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: account.apiKey }, { goal: `A website for stall ${i} at the market` });
      created.unshift(answer.body.plan.id);
    }
    const idsOf = (stdout: string) => (JSON.parse(stdout) as { plans: RestPlan[] }).plans.map((p) => p.id);
    const first = await runCli(["plans", "--json"], own);
    expect(idsOf(first.stdout)).toEqual(created.slice(0, 10));
    const older = await runCli(["plans", "--before", created[9]!, "--json"], own);
    expect(older.code).toBe(0);
    expect(idsOf(older.stdout)).toEqual(created.slice(10));
    const all = await runCli(["plans", "--all", "--json"], own);
    expect(idsOf(all.stdout)).toEqual(created);
    const none = await runCli(["plans", "--before", created[11]!], own);
    expect(none.stdout).toContain(`No plans older than ${created[11]}.`);
    const bad = await runCli(["plans", "--before", "pln_notmine"], own);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/before must be the id of one of your plans/);
  });

  it("shows a failed stage with its error and attempts, exits 1, and resume retries it", async () => {
    work.instant.delete("write");
    const run = startCli(["run", "A website for a sourdough class"], env);
    run.child.stdin.end();
    const held = await work.next();
    held.fail(new StageFailure("writer_error", "the model answered twice without valid JSON, the second time cut short after the outline's third page"));
    expect(await run.exit).toBe(1);
    const id = planIdIn(run.stderr);
    expect(run.stdout).toContain("  write      failed             attempt 1  writer_error: the model answered twice without valid JSON");
    // Piped, nothing is repainted, so nothing is cut: a log keeps the whole line.
    expect(run.stdout).not.toContain("…");
    expect(run.stdout).toContain("[##########--------------------]  33%  failed");
    expect(run.stderr).toContain(`Plan ${id} failed at "write": writer_error: the model answered twice without valid JSON`);
    expect(run.stderr).toContain(`Try the stage again with: project-zero resume ${id}`);

    work.instant.add("write");
    const retried = await runCli(["resume", id, "--approve", "review"], env);
    expect(retried.code).toBe(0);
    expect(retried.stdout).toContain("  write      succeeded          attempt 2");
  });

  it("Ctrl-C stops following without cancelling, and says how to pick the plan up again", async () => {
    work.instant.delete("write");
    const run = startCli(["run", "A website for a repair cafe in Leeds"], env);
    run.child.stdin.end();
    const held = await work.next();
    await run.waitFor("  write      running            attempt 1");
    run.child.kill("SIGINT");
    expect(await run.exit).toBe(130);
    const id = planIdIn(run.stderr);
    expect(run.stderr).toContain(`Stopped following ${id}; it keeps running on the service.`);
    expect(run.stderr).toContain(`Follow it again with: project-zero show ${id} --follow`);
    expect((await planOf(id)).status).toBe("running");

    // Picking it up again: show --follow joins the live plan where it is.
    const follow = startCli(["show", id, "--follow"], env);
    follow.child.stdin.end();
    await follow.waitFor("  write      running            attempt 1");
    held.succeed();
    expect(await follow.exit).toBe(6);
    expect(follow.stdout).toContain("  write      succeeded          attempt 1");
    expect(follow.stdout).toContain("66%  awaiting_approval");
  });

  it("refuses a bad key, a key without the scope, and a plan that is not there, in one line each", async () => {
    const badKey = await runCli(["run", "A website for a bakery"], { ...env, ZERO_API_KEY: "zk_notARealKeyAtAll0000000000000000000" });
    expect(badKey.code).toBe(3);
    expect(badKey.stdout).toBe("");
    expect(badKey.stderr).toMatch(
      /^project-zero: the API key was not accepted \(401 unauthenticated\): .+; make a key in the Console \(http:\/\/127\.0\.0\.1:\d+\/console\) and set ZERO_API_KEY\n$/,
    );

    const readOnly = await createAccountWithKey(app, ["read"]);
    const noScope = await runCli(["run", "A website for a bakery"], { ...env, ZERO_API_KEY: readOnly.apiKey });
    expect(noScope.code).toBe(3);
    expect(noScope.stderr).toMatch(
      /^project-zero: the API key may not do this \(403 permission_denied\): this API key lacks the `build` scope; make a key that has it in the Console \(http:\/\/127\.0\.0\.1:\d+\/console\) and set ZERO_API_KEY\n$/,
    );

    const missing = await runCli(["show", "pln_doesNotExist000000"], env);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toBe("project-zero: not found (404): no plan with that id\n");

    const noKey = await runCli(["plans"], { ZERO_URL: app.url });
    expect(noKey.code).toBe(3);
    expect(noKey.stderr).toMatch(/^project-zero: ZERO_API_KEY is not set/);
  });

  it("refuses an outcome this service cannot run (ebook without an upstream) with 503 and exit 5", async () => {
    const { code, stdout, stderr } = await runCli(["run", "An ebook about repairing bicycles", "--outcome", "ebook"], env);
    expect(code).toBe(5);
    expect(stdout).toBe("");
    expect(stderr).toBe("project-zero: outcome unavailable (503): the ebook outcome cannot run on this service; cannot run here: ebook\n");

    const json = await runCli(["run", "An ebook about repairing bicycles", "--outcome", "ebook", "--json"], env);
    expect(json.code).toBe(5);
    expect(JSON.parse(json.stderr)).toEqual({
      error: { type: "outcome_unavailable", message: "the ebook outcome cannot run on this service", unavailable: ["ebook"] },
    });
  });

  it("stops quietly with exit 141 when whoever reads its output has gone (plans --all, history, download -o -)", async () => {
    const first = await runCli(["run", "A website for a lending library of tools", "--approve"], env);
    expect(first.code).toBe(0);
    const id = planIdIn(first.stderr);
    await makeDownloadable(id);
    for (const args of [
      ["plans", "--all"],
      ["history", id],
      ["history", id, "--json"],
      ["download", id, "-o", "-"],
    ]) {
      // The reader is gone before the first line, as when `head -1` has had its line.
      const run = startCli(args, env);
      run.child.stdout.destroy();
      run.child.stdin.end();
      expect({ args, code: await run.exit, stderr: run.stderr }).toEqual({ args, code: 141, stderr: "" });
    }
  });

  it("download -o names the path it cannot write and why, exits 2 and leaves no partial file behind", async () => {
    const first = await runCli(["run", "A website for a mending circle", "--approve"], env);
    expect(first.code).toBe(0);
    const id = planIdIn(first.stderr);
    await makeDownloadable(id);
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-cli-download-"));
    try {
      await fs.mkdir(path.join(dir, "taken"));
      const noDir = path.join(dir, "nonexistent", "x.zip");
      const missing = await runCli(["download", id, "-o", noDir], env);
      expect(missing).toEqual({ code: 2, stdout: "", stderr: `project-zero: cannot write ${noDir}: no such directory\n` });

      // A directory where the file should go: written whole beside it, then refused at the rename.
      const onDir = await runCli(["download", id, "-o", path.join(dir, "taken")], env);
      expect(onDir).toEqual({ code: 2, stdout: "", stderr: `project-zero: cannot write ${path.join(dir, "taken")}: it is a directory\n` });

      const json = await runCli(["download", id, "-o", noDir, "--json"], env);
      expect(json.code).toBe(2);
      expect(JSON.parse(json.stderr)).toEqual({ error: { type: "invalid_request", message: `cannot write ${noDir}: no such directory` } });

      const saved = await runCli(["download", id, "-o", path.join(dir, "site.zip")], env);
      expect(saved.code).toBe(0);
      const underFile = path.join(dir, "site.zip", "x.zip");
      const notDir = await runCli(["download", id, "-o", underFile], env);
      expect(notDir.stderr).toBe(`project-zero: cannot write ${underFile}: a part of the path is not a directory\n`);
      expect(notDir.code).toBe(2);
      expect((await fs.readdir(dir)).sort()).toEqual(["site.zip", "taken"]);
      expect(await fs.readdir(path.join(dir, "taken"))).toEqual([]);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it("download takes the service's suggested name as a plain file name here, never a path or a hidden file, and replaces nothing", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-cli-suggested-"));
    const here = path.join(dir, "here");
    await fs.mkdir(here);
    // A service (or whatever answers at ZERO_URL) that suggests names it should not.
    let suggested = "";
    const hostile = http.createServer((_req, res) => {
      const disposition = /^[\x20-\x7e]*$/.test(suggested) ? `filename="${suggested}"` : `filename*=UTF-8''${encodeURIComponent(suggested)}`;
      res.writeHead(200, { "content-type": "application/zip", "content-disposition": `attachment; ${disposition}` });
      res.end("zip bytes");
    });
    await new Promise<void>((resolve) => hostile.listen(0, "127.0.0.1", resolve));
    const hostileEnv = { ZERO_URL: `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`, ZERO_API_KEY: env.ZERO_API_KEY! };
    const download = async (name: string) => {
      suggested = name;
      return runCli(["download", "pln_x"], hostileEnv, here);
    };
    try {
      expect((await download("../outside.txt")).code).toBe(0);
      expect((await download("/tmp/absolute.zip")).code).toBe(0);
      expect((await download(".bashrc")).code).toBe(0);
      expect((await fs.readdir(dir)).sort()).toEqual(["here"]);
      expect((await fs.readdir(here)).sort()).toEqual(["absolute.zip", "outside.txt", "pln_x.zip"]);
      // Found reviewing the client: names Windows reads as a drive ("C:" writes on drive C wherever the CLI runs), a
      // stream or a device, and a dot-file behind an invisible character, are not taken either.
      for (const name of ["C:evil.zip", "evil.zip:Zone.Identifier", "CON.zip", "nul", "LPT1", "a<b>.zip", "\u200b.hidden", "\ufeff.profile"]) {
        await fs.rm(path.join(here, "pln_x.zip"));
        expect((await download(name)).code, name).toBe(0);
        expect((await fs.readdir(here)).sort(), name).toEqual(["absolute.zip", "outside.txt", "pln_x.zip"]);
      }
      // Trailing dots and spaces, which Windows drops, are dropped here too.
      expect((await download("trailing.zip. .")).code).toBe(0);
      expect((await fs.readdir(here)).sort()).toEqual(["absolute.zip", "outside.txt", "pln_x.zip", "trailing.zip"]);
      // A file already there is kept: the suggested name is the service's choice, replacing is the user's (-o).
      await fs.writeFile(path.join(here, "site.zip"), "mine");
      const taken = await download("site.zip");
      expect(taken.code).toBe(2);
      expect(taken.stderr).toBe("project-zero: site.zip already exists; pass -o site.zip to replace it, or -o another name\n");
      expect(await fs.readFile(path.join(here, "site.zip"), "utf8")).toBe("mine");
    } finally {
      hostile.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it("prints what the service says as text, never as terminal control: escapes and line breaks in a name are shown, not obeyed", async () => {
    work.instant = new Set(WORK_STAGES.filter((stage) => stage !== "understand"));
    const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: key }, { goal: "A website for a shop\nwith a \u001b]0;title\u0007 name" });
    const id = created.body.plan.id;
    // A project name as a model may write it, with escape sequences and a line break in it.
    (await work.next()).succeed({ output: {}, project: { id: `prj_${id.slice(4, 12)}`, name: "\u001b[31mRED\u001b[0m shop\nname", slug: "red-shop" } });
    await waitForPlan(app.url, { apiKey: key }, id, (plan) => plan.status === "awaiting_approval");
    for (const args of [["plans"], ["show", id], ["history", id]]) {
      const { code, stdout } = await runCli(args, env);
      expect(code).toBe(0);
      // Nothing a terminal would act on: no escape, no bell, no carriage return; line breaks only between lines.
      expect({ args, controls: stdout.match(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g) }).toEqual({ args, controls: null });
    }
    const row = (await runCli(["plans"], env)).stdout.split("\n").find((text) => text.startsWith(id));
    expect(row).toMatch(/\[31mRED.\[0m shop name$/);
  });

  it("says https:// met a server without TLS, and exits 5 as for one that does not answer", async () => {
    const https = app.url.replace(/^http:/, "https:");
    const wrong = await runCli(["plans", "--url", https], env);
    expect(wrong).toEqual({ code: 5, stdout: "", stderr: `project-zero: cannot reach ${https}: the server does not speak TLS (try http://)\n` });
  });

  it("refuses a --url or ZERO_URL that is not http(s)://host:port as a usage error naming the value (exit 2)", async () => {
    const port = new URL(app.url).port;
    const refusals: [string[], Record<string, string>, string][] = [
      [["plans", "--url", `127.0.0.1:${port}`], env, `--url must be http(s)://host:port, not "127.0.0.1:${port}" (did you mean http://127.0.0.1:${port}?)`],
      [["plans", "--url", `${app.url}/api`], env, `--url must be http(s)://host:port with no path, not "${app.url}/api"`],
      [
        ["plans"],
        { ...env, ZERO_URL: `localhost:${port}` },
        `ZERO_URL must be http(s)://host:port, not "localhost:${port}" (did you mean http://localhost:${port}?)`,
      ],
      [["plans"], { ...env, ZERO_URL: `ftp://127.0.0.1:${port}` }, `ZERO_URL must be http(s)://host:port, not "ftp://127.0.0.1:${port}"`],
      [["show", "pln_x", "--json"], { ...env, ZERO_URL: `${app.url}?x=1` }, `ZERO_URL must be http(s)://host:port, not "${app.url}?x=1"`],
    ];
    for (const [args, runEnv, message] of refusals) {
      const refused = await runCli(args, runEnv);
      const stderr = args.includes("--json") ? `${JSON.stringify({ error: { type: "invalid_request", message } })}\n` : `project-zero: ${message}\n`;
      expect({ args, ...refused }).toEqual({ args, code: 2, stdout: "", stderr });
    }
    // A trailing slash is still the service's address; a bad ZERO_URL does not stop commands that do not call it.
    expect((await runCli(["plans", "--url", `${app.url}/`], env)).code).toBe(0);
    expect((await runCli(["--help"], { ZERO_URL: "nonsense" })).code).toBe(0);
  });

  it("says a server that does not speak the API is not a project-zero service (exit 5)", async () => {
    let answer: (response: http.ServerResponse) => void = () => {};
    const other = http.createServer((_request, response) => answer(response));
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    try {
      answer = (response) => response.writeHead(200, { "content-type": "application/json" }).end("{}");
      const json = await runCli(["plans", "--url", url], env);
      expect(json).toEqual({
        code: 5,
        stdout: "",
        stderr: `project-zero: ${url} is not a project-zero service (it answered: unsupported content type application/json); check --url or ZERO_URL\n`,
      });
      answer = (response) => response.writeHead(404, { "content-type": "text/html" }).end("<h1>Not here</h1>");
      const missing = await runCli(["show", "pln_x", "--json"], { ...env, ZERO_URL: url });
      expect(missing.code).toBe(5);
      expect(JSON.parse(missing.stderr)).toEqual({
        error: { type: "unreachable", message: `${url} is not a project-zero service (it answered: HTTP 404); check --url or ZERO_URL` },
      });
    } finally {
      other.closeAllConnections();
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it("says so when nothing answers at ZERO_URL, and exits 2 on a bad command line", async () => {
    const port = await unusedPort();
    const down = await runCli(["plans"], { ...env, ZERO_URL: `http://127.0.0.1:${port}` });
    expect(down.code).toBe(5);
    expect(down.stderr).toMatch(new RegExp(`^project-zero: cannot reach http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED.*; is the service running\\?`));

    // A server that takes the connection and never answers: the command gives up after ZERO_CALL_TIMEOUT_MS.
    const silent = http.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const waited = await runCli(["plans"], { ...env, ZERO_URL: silentUrl, ZERO_CALL_TIMEOUT_MS: "300" });
      expect(waited.code).toBe(5);
      expect(waited.stderr).toBe("project-zero: deadline_exceeded: the service did not answer within 0.3 s (ZERO_CALL_TIMEOUT_MS)\n");
      const badTimeout = await runCli(["plans"], { ...env, ZERO_URL: silentUrl, ZERO_CALL_TIMEOUT_MS: "soon" });
      expect(badTimeout.code).toBe(2);
      expect(badTimeout.stderr).toMatch(/ZERO_CALL_TIMEOUT_MS must be a whole number of milliseconds, not "soon"/);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }

    const usage = await runCli(["run", "A website for a bakery", "--outcome", "pdf"], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe('project-zero: --outcome must be website or ebook, not "pdf"\nRun "project-zero --help" for the commands.\n');

    const tooShort = await runCli(["run", "short"], env);
    expect(tooShort.code).toBe(2);
    expect(tooShort.stderr).toMatch(/^project-zero: invalid_request: /);
  });

  it("download waits for the service's answer no longer than ZERO_CALL_TIMEOUT_MS, as every call does (exit 5)", async () => {
    const silent = await listen(() => {});
    try {
      const waited = await runCli(["download", "pln_x"], { ...env, ZERO_URL: silent.url, ZERO_CALL_TIMEOUT_MS: "300" });
      expect(waited).toEqual({
        code: 5,
        stdout: "",
        stderr: "project-zero: deadline_exceeded: the service did not answer within 0.3 s (ZERO_CALL_TIMEOUT_MS)\n",
      });
    } finally {
      await silent.close();
    }
  });

  it("download from a server that is not project-zero saves nothing and says so, as every command does (exit 5)", async () => {
    let answer: (response: http.ServerResponse) => void = () => {};
    const other = await listen((_request, response) => answer(response));
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-cli-other-"));
    try {
      answer = (response) => response.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><h1>Welcome</h1>");
      const page = await runCli(["download", "pln_x"], { ...env, ZERO_URL: other.url }, dir);
      expect(page).toEqual({
        code: 5,
        stdout: "",
        stderr: `project-zero: ${other.url} is not a project-zero service (it answered: unsupported content type text/html); check --url or ZERO_URL\n`,
      });
      answer = (response) => response.writeHead(404, { "content-type": "text/html" }).end("<h1>Not here</h1>");
      const missing = await runCli(["download", "pln_x"], { ...env, ZERO_URL: other.url }, dir);
      expect(missing).toEqual({
        code: 5,
        stdout: "",
        stderr: `project-zero: ${other.url} is not a project-zero service (it answered: HTTP 404); check --url or ZERO_URL\n`,
      });
      expect(await fs.readdir(dir)).toEqual([]);
    } finally {
      await other.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  // Found by a review of the CLI as another team uses it: a pipe that read every byte saw exit 141, and a connection lost mid-file blamed the disk.
  it("download -o - into a pipe read to its end exits 0 with the whole file", async () => {
    const first = await runCli(["run", "A website for a seed library", "--approve"], env);
    const id = planIdIn(first.stderr);
    await makeDownloadable(id);
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-cli-pipe-"));
    try {
      expect((await runCli(["download", id, "-o", "saved.zip"], env, dir)).code).toBe(0);
      const piped = await runCli(["download", id, "-o", "-"], env);
      expect({ code: piped.code, stderr: piped.stderr }).toEqual({ code: 0, stderr: "" });
      // Read as text by the helper, so compared by what survives that: its start and its length in characters.
      const saved = (await fs.readFile(path.join(dir, "saved.zip"))).toString("utf8");
      expect(piped.stdout.startsWith("PK")).toBe(true);
      expect(piped.stdout.length).toBe(saved.length);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it("a download whose connection drops mid-file is unreachable (exit 5), to a file or to stdout, and leaves nothing behind", async () => {
    // The service itself, whose download's connection drops: its capabilities answer as project-zero's.
    const dropping = await listen((request, response) => {
      if (request.url?.startsWith("/api/capabilities")) {
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ service: "project-zero" }));
        return;
      }
      response.writeHead(200, { "content-type": "application/zip", "content-disposition": 'attachment; filename="x.zip"' });
      response.write(Buffer.alloc(1000));
      setTimeout(() => response.socket?.destroy(), 100);
    });
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-cli-drop-"));
    try {
      for (const args of [
        ["download", "pln_x"],
        ["download", "pln_x", "-o", "-"],
      ]) {
        const run = await runCli(args, { ...env, ZERO_URL: dropping.url }, dir);
        expect({ args, code: run.code, stderr: run.stderr }).toEqual({
          args,
          code: 5,
          stderr: expect.stringMatching(/^project-zero: .*unreachable|cannot reach/),
        });
        expect(run.stderr).not.toMatch(/\n\s+at /);
      }
      expect(await fs.readdir(dir)).toEqual([]);
    } finally {
      await dropping.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it("download -o <dir>/ saves the file under the service's name in that directory, making it if need be", async () => {
    const first = await runCli(["run", "A website for a darning club", "--approve"], env);
    expect(first.code).toBe(0);
    const id = planIdIn(first.stderr);
    await makeDownloadable(id);
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-cli-into-"));
    try {
      const saved = await runCli(["download", id, "-o", "site/"], env, dir);
      expect(saved).toEqual({ code: 0, stdout: expect.stringMatching(/^Saved site\/test-project\.zip \([\d,]+ bytes, application\/zip\)\n$/), stderr: "" });
      expect(await fs.readdir(path.join(dir, "site"))).toEqual(["test-project.zip"]);
      // The name is still the service's choice: a file already there is kept.
      const again = await runCli(["download", id, "-o", "site/"], env, dir);
      expect(again.code).toBe(2);
      expect(again.stderr).toBe("project-zero: site/test-project.zip already exists; pass -o site/test-project.zip to replace it, or -o another name\n");
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses an API key with characters no key has (pasted smart quotes) as a key, in words (exit 3)", async () => {
    for (const apiKey of ["“zk_abc”", "zk_a\u0001b", "zk_é"]) {
      for (const args of [["plans"], ["download", "pln_x"]]) {
        const refused = await runCli(args, { ...env, ZERO_API_KEY: apiKey });
        expect({ apiKey, args, ...refused }).toEqual({
          apiKey,
          args,
          code: 3,
          stdout: "",
          stderr: expect.stringMatching(/^project-zero: ZERO_API_KEY contains characters a key never has .+\n$/),
        });
      }
    }
  });

  it("says a server that takes the connection and drops a call is not a project-zero service, when that is what is there", async () => {
    // A plain web server that hangs up on a POST (as one that answers before reading the body can) and has no
    // project-zero at /api/capabilities.
    const other = await listen((request, response) => {
      if (request.method === "POST") request.socket.resetAndDestroy();
      else response.writeHead(404, { "content-type": "text/html" }).end("<h1>Not Found</h1>");
    });
    try {
      const run = await runCli(["run", "A website for a flower shop in Ghent"], { ...env, ZERO_URL: other.url });
      expect(run).toEqual({
        code: 5,
        stdout: "",
        stderr: `project-zero: ${other.url} is not a project-zero service (it answered: HTTP 404); check --url or ZERO_URL\n`,
      });
    } finally {
      await other.close();
    }
  });

  it("does not call the service another server when, after a dropped call, it answers as ours does while starting, or a proxy answers 502", async () => {
    // During a deploy: the call is dropped as the old process goes, then the new one answers as it starts, or a
    // reverse proxy answers for a backend that is not up yet. The address is right; the service is not ready.
    let answerGet: http.RequestListener = answerWhileStarting;
    const restarting = await listen((request, response) => {
      if (request.method === "POST") request.socket.resetAndDestroy();
      else answerGet(request, response);
    });
    try {
      for (const [answers, answer] of [
        ["ours while starting", answerWhileStarting],
        ["a proxy with no backend", (_request, response) => response.writeHead(502, { "content-type": "text/html" }).end("<h1>502 Bad Gateway</h1>")],
        [
          "ours, refusing",
          (_request, response) => response.writeHead(403, { "content-type": "application/json" }).end('{"error":{"type":"permission_denied","message":"no"}}'),
        ],
      ] as const satisfies readonly (readonly [string, http.RequestListener])[]) {
        answerGet = answer;
        const run = await runCli(["run", "A website for a flower shop in Ghent"], { ...env, ZERO_URL: restarting.url });
        expect({ answers, ...run }).toEqual({
          answers,
          code: 5,
          stdout: "",
          stderr: expect.stringMatching(new RegExp(`^project-zero: cannot reach ${restarting.url.replaceAll(".", "\\.")}: .*; is the service running\\?`)),
        });
      }
    } finally {
      await restarting.close();
    }
  });

  it("in --json mode reports a bad command line as JSON too, and every line on stderr is JSON", async () => {
    const usage = await runCli(["show", "--json"], env);
    expect(usage).toEqual({
      code: 2,
      stdout: "",
      stderr: `${JSON.stringify({ error: { type: "invalid_request", message: "show needs one plan id, e.g. project-zero show pln_…" } })}\n`,
    });
    const atGate = await runCli(["run", "A website for a knitting circle", "--json"], env);
    expect(atGate.code).toBe(6);
    const notes = atGate.stderr.trimEnd().split("\n");
    expect(notes.length).toBeGreaterThanOrEqual(2);
    for (const text of notes) expect(JSON.parse(text)).toEqual({ note: expect.any(String) });
    expect(notes.at(-1)).toMatch(/"note":"Approve and publish with: project-zero resume pln_\w+ --approve review"/);
  });

  it("takes --url and --json before the command too, as help lists them among the options", async () => {
    const listed = await runCli(["--url", app.url, "--json", "plans"], { ZERO_API_KEY: key });
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({ plans: expect.any(Array) });
    const refused = await runCli(["--outcome", "ebook", "run", "A website for a bakery"], env);
    expect(refused.code).toBe(2);
  });

  it("with no command prints the help on stderr and exits 2; asked for, on stdout with 0", async () => {
    const bare = await runCli([], env);
    expect(bare.code).toBe(2);
    expect(bare.stdout).toBe("");
    expect(bare.stderr).toContain("Usage: project-zero <command> [options]");
    const asked = await runCli(["--help"], env);
    expect(asked.code).toBe(0);
    expect(asked.stdout).toContain("Usage: project-zero <command> [options]");
  });

  it("resume of a succeeded or cancelled plan says there is nothing to resume, never that it resumed", async () => {
    const first = await runCli(["run", "A website for a lace makers' guild", "--approve"], env);
    expect(first.code).toBe(0);
    const done = planIdIn(first.stderr);
    const succeeded = await runCli(["resume", done], env);
    expect(succeeded.code).toBe(0);
    expect(succeeded.stderr).not.toContain("Resumed");
    expect(succeeded.stderr).toContain(`${done} has already succeeded; there is nothing to resume.`);

    work.instant = new Set(["understand"]);
    const created = await postExecution<{ plan: RestPlan }>(app.url, { apiKey: key }, { goal: "A website for a village pottery" });
    await work.next();
    expect((await runCli(["cancel", created.body.plan.id], env)).code).toBe(0);
    const cancelled = await runCli(["resume", created.body.plan.id], env);
    expect(cancelled.code).toBe(1);
    expect(cancelled.stderr).not.toContain("Resumed");
    expect(cancelled.stderr).toContain(`${created.body.plan.id} is cancelled; there is nothing to resume.`);
  });
});

describe("project-zero serve", () => {
  it("starts the service from the environment and stops cleanly on SIGTERM", async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-cli-serve-"));
    try {
      const serve = startCli(["serve", "--port", "0"], { ZERO_DATA_DIR: dataDir, LOG_LEVEL: "info", ZERO_SHUTDOWN_GRACE_MS: "1000" });
      await serve.waitFor(/"msg":"listening"/, { timeoutMs: 60_000 });
      const url = (/"url":"(http:\/\/[^"]+)"/.exec(serve.stdout) ?? [])[1]!;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const capabilities = (await (await fetch(`${url}/api/capabilities`)).json()) as { service: string };
      expect(capabilities.service).toBe("project-zero");
      serve.child.kill("SIGTERM");
      expect(await serve.exit).toBe(0);
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});

/** A throwaway HTTP server on a free local port, standing for whatever else may answer at ZERO_URL. */
async function listen(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
