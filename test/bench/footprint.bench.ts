import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { Pool } from "undici";
import { serverCommand, type ServerCommand } from "../support/server-process.js";

/**
 * The embedded default's footprint, PGlite against the embedded Postgres, as a
 * newcomer meets it: `npm start` with no DATABASE_URL (the build and flags of
 * the start script), an account and a key, then chat load and plan creates.
 * Memory is the service's RSS plus the proportional share (PSS) of every
 * process it started: Postgres's processes share their buffers, so their
 * RSS would count the same pages many times.
 *
 * - first start: spawn to ready on an empty data dir, and the peak on the way
 *   (the service's VmHWM; the database's PSS once ready);
 * - idle: five seconds after ready;
 * - chat load: 64 connections for 4 s against an instant upstream, the
 *   largest total sampled every 50 ms, and requests per second;
 * - creates: `POST /api/execution`, 16 at a time for 4 s (the offline writer
 *   then runs the stages beside them);
 * - restart: stop, start on the same data dir, time to ready and peak.
 */

const CHAT_MS = Number(process.env.BENCH_THROUGHPUT_MS ?? 4000);
const CREATE_MS = 4000;
const root = path.resolve(import.meta.dirname, "../..");
const children: ChildProcess[] = [];

interface Started {
  child: ChildProcess;
  url: string;
  apiKey: string;
  readyMs: number;
}

function start(command: ServerCommand, env: Record<string, string>): Promise<Started> {
  const [program, ...args] = command.argv;
  const began = performance.now();
  const child = spawn(program!, args, { cwd: root, env: { ...process.env, ...command.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on("line", (line) => {
      try {
        const info = JSON.parse(line) as { url?: string; apiKey?: string };
        if (info.url && info.apiKey) resolve({ child, url: info.url, apiKey: info.apiKey, readyMs: performance.now() - began });
      } catch {
        // A log line.
      }
    });
    child.once("exit", (code) => reject(new Error(`the service exited with ${code}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** Every process `pid` started, recursively. */
function descendants(pid: number): number[] {
  let direct: number[] = [];
  try {
    direct = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return direct.flatMap((child) => [child, ...descendants(child)]);
}

function kb(file: string, field: string): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(fs.readFileSync(file, "utf8"));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** MB: the service's RSS (or peak), and the PSS of everything it started. */
function memory(pid: number): { service: number; servicePeak: number; database: number } {
  const database = descendants(pid).reduce((sum, child) => sum + kb(`/proc/${child}/smaps_rollup`, "Pss"), 0);
  return { service: kb(`/proc/${pid}/status`, "VmRSS") / 1024, servicePeak: kb(`/proc/${pid}/status`, "VmHWM") / 1024, database: database / 1024 };
}

/** Runs `load` while sampling the service's and its database's memory every 50 ms; answers the largest total. */
async function sampled<T>(pid: number, load: () => Promise<T>): Promise<{ result: T; peakTotal: number }> {
  let peakTotal = 0;
  const sampler = setInterval(() => {
    const now = memory(pid);
    peakTotal = Math.max(peakTotal, now.service + now.database);
  }, 50);
  try {
    const result = await load();
    return { result, peakTotal };
  } finally {
    clearInterval(sampler);
  }
}

/** `connections` clients posting back to back for `ms`; answers completed requests per second. */
async function hammer(started: Started, path: string, payload: () => string, connections: number, ms: number, ok: number): Promise<number> {
  const pool = new Pool(started.url, { connections, pipelining: 1 });
  const headers = { "content-type": "application/json", authorization: `Bearer ${started.apiKey}` };
  let done = 0;
  let failed = 0;
  const began = performance.now();
  const end = began + ms;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const response = await pool.request({ method: "POST", path, headers, body: payload() });
        await response.body.text();
        if (response.statusCode === ok) done++;
        else failed++;
      }
    }),
  );
  const elapsed = performance.now() - began;
  await pool.close();
  if (failed > 0) throw new Error(`${failed} of ${done + failed} requests to ${path} failed`);
  return (done / elapsed) * 1000;
}

const chatBody = JSON.stringify({ model: "project-zero", messages: [{ role: "user", content: "Hello!" }] });
let creates = 0;
const createBody = () => JSON.stringify({ goal: `A website for a small bakery number ${creates++} with a menu and opening hours`, outcome: "website" });

interface Row {
  database: string;
  firstStartMs: number;
  firstStartPeak: number;
  idle: number;
  idleDatabase: number;
  chatRps: number;
  chatPeak: number;
  createsPerSecond: number;
  createPeak: number;
  restartMs: number;
  restartPeak: number;
}

async function measure(database: "pglite" | "postgres", command: ServerCommand, upstreamOrigin: string): Promise<Row> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `zero-bench-footprint-${database}-`));
  const env = {
    BENCH_DATA_DIR: dataDir,
    ZERO_EMBEDDED_DATABASE: database,
    DATABASE_URL: "",
    LOG_LEVEL: "warn",
    ZERO_UPSTREAMS: JSON.stringify([{ name: "bench", baseUrl: `${upstreamOrigin}/v1`, apiKey: "sk-bench-upstream", model: "bench-upstream-model" }]),
    ZERO_FREE_POOL_DAILY_REQUESTS: "1000000000",
    ZERO_GENERATION_LIMIT: "1000000000",
  };
  try {
    const first = await start(command, env);
    const pid = first.child.pid!;
    const firstStart = memory(pid);
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const idle = memory(pid);
    const chat = await sampled(pid, () => hammer(first, "/v1/chat/completions", () => chatBody, 64, CHAT_MS, 200));
    const create = await sampled(pid, () => hammer(first, "/api/execution", createBody, 16, CREATE_MS, 202));
    await stop(first.child);
    const again = await start(command, env);
    const restart = memory(again.child.pid!);
    await stop(again.child);
    return {
      database,
      firstStartMs: first.readyMs,
      firstStartPeak: firstStart.servicePeak + firstStart.database,
      idle: idle.service + idle.database,
      idleDatabase: idle.database,
      chatRps: chat.result,
      chatPeak: chat.peakTotal,
      createsPerSecond: create.result,
      createPeak: create.peakTotal,
      restartMs: again.readyMs,
      restartPeak: restart.servicePeak + restart.database,
    };
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const upstream = spawn(process.execPath, ["--import", "tsx", "test/bench/support/chat-instant-upstream.ts"], {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(upstream);
  const { port } = await new Promise<{ port: number }>((resolve) =>
    readline.createInterface({ input: upstream.stdout! }).once("line", (line) => resolve(JSON.parse(line) as { port: number })),
  );
  const command = await serverCommand("test/bench/support/chat-gateway-server.ts");
  const rows: Row[] = [];
  for (const database of ["pglite", "postgres"] as const) rows.push(await measure(database, command, `http://127.0.0.1:${port}`));

  const mb = (n: number) => `${n.toFixed(0)} MB`;
  console.log(`embedded database (service RSS + its database's PSS)   ${rows.map((r) => r.database.padStart(12)).join("")}`);
  const line = (label: string, value: (row: Row) => string) => console.log(label.padEnd(54) + rows.map((r) => value(r).padStart(12)).join(""));
  line("first start: spawn to ready", (r) => `${(r.firstStartMs / 1000).toFixed(2)} s`);
  line("first start: peak (goal <= 250 MB)", (r) => mb(r.firstStartPeak));
  line("idle, 5 s after ready (goal <= 150 MB)", (r) => mb(r.idle));
  line("  of which the database processes", (r) => mb(r.idleDatabase));
  line("chat load, 64 connections: peak (goal <= 200 MB)", (r) => mb(r.chatPeak));
  line("chat load: requests/s", (r) => r.chatRps.toFixed(0));
  line("creates, 16 at a time: plans/s", (r) => r.createsPerSecond.toFixed(0));
  line("creates: peak", (r) => mb(r.createPeak));
  line("restart: spawn to ready", (r) => `${(r.restartMs / 1000).toFixed(2)} s`);
  line("restart: peak", (r) => mb(r.restartPeak));
  const [pglite, postgres] = rows as [Row, Row];
  console.log(
    `\nembedded Postgres / PGlite: idle ${(postgres.idle / pglite.idle).toFixed(2)}x, chat peak ${(postgres.chatPeak / pglite.chatPeak).toFixed(2)}x, ` +
      `creates ${(postgres.createsPerSecond / pglite.createsPerSecond).toFixed(2)}x, first start ${(postgres.firstStartMs / pglite.firstStartMs).toFixed(2)}x`,
  );
}

try {
  await main();
} finally {
  for (const child of children) child.kill("SIGTERM");
}
