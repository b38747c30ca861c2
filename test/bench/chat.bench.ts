import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { Client, Pool } from "undici";
import { freshBenchDatabase } from "./support/postgres.js";
import { profileOf, topSelfTime } from "./support/cpu-profile.js";
import { processCpuMicros } from "./support/process-cpu.js";
import { peakRssMb, resetPeakRss } from "./support/rss.js";
import { serverCommand, type ServerCommand } from "../support/server-process.js";
import { unusedPort } from "../support/ports.js";

/**
 * The chat gateway against the same instant upstream four ways, in
 * interleaved rounds: direct to the upstream; through the least Node proxy
 * (support/chat-node-proxy.ts, the floor for memory, built and run as the
 * gateway is); through this service; and through Portkey's open-source
 * gateway (pointed at the upstream with `x-portkey-custom-host`). Each server
 * runs in its own process.
 *
 * - throughput: CONCURRENCY connections, back to back, for THROUGHPUT_MS;
 * - latency: one connection, back to back (under saturation latency is only
 *   connections ÷ throughput, so it is measured unloaded);
 * - streaming time to first byte: one connection, time to the first body
 *   byte (the first SSE event; response heads do not count);
 * - CPU per request: each proxy process's CPU time (from /proc) over its
 *   throughput run, divided by the requests it answered. Client, upstream
 *   and proxy share the machine's cores, so this is what a proxy's
 *   throughput costs, and the figure to profile against;
 * - peak RSS (VmHWM) of each proxy process from its first request on (so
 *   the gateway's setup, a scrypt sign-up, is not counted).
 *
 * Then the same comparison for the Responses API (`/v1/responses`): the
 * gateway translates it to chat completions, Portkey forwards it to the
 * upstream's own `/v1/responses`, and "direct" calls that route. Twice: as
 * clients send it (`store` defaults to true, so the gateway commits each
 * answer to Postgres before it answers), and with `store: false`, which is
 * translation alone, like Portkey's forwarding. The least Node proxy forwards
 * it to the upstream's own route too; for stored answers it is the floor of
 * a stored answer, writing each to Postgres before it answers.
 *
 * With BENCH_PROFILE=1 the gateway runs under `--cpu-prof`, and its hottest
 * functions by self time are printed at the end; BENCH_APIS=chat (or
 * responses, responses-unstored) runs those comparisons only.
 */

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = 64;
const THROUGHPUT_MS = Number(process.env.BENCH_THROUGHPUT_MS ?? 4000);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 2500);
const WARMUP_MS = 1500;
const APIS = (process.env.BENCH_APIS ?? "chat,responses,responses-unstored").split(",");
const PROFILE_DIR = process.env.BENCH_PROFILE ? fs.mkdtempSync(path.join(os.tmpdir(), "zero-bench-prof-")) : undefined;
const UPSTREAM_MODEL = "bench-upstream-model";
const UPSTREAM_KEY = "sk-bench-upstream";

const root = path.resolve(import.meta.dirname, "../..");
const children: ChildProcess[] = [];

interface Target {
  name: "direct" | "node-proxy" | "gateway" | "portkey";
  origin: string;
  headers: Record<string, string>;
  model: string;
  pid?: number;
}

/** One OpenAI API as the benchmark calls it. */
interface Api {
  name: "chat completions" | "responses" | "responses, store: false";
  path: string;
  body(model: string, stream: boolean): string;
  /** True when a plain answer carries the upstream's words. */
  answered(json: unknown): boolean;
  /** How a complete stream ends. */
  streamEnd: string;
}

const CHAT: Api = {
  name: "chat completions",
  path: "/v1/chat/completions",
  body: (model, stream) =>
    // `stream` first: the instant upstream spots it without parsing.
    JSON.stringify({
      ...(stream ? { stream: true } : {}),
      model,
      messages: [
        { role: "system", content: "You are a helpful assistant." },
        { role: "user", content: "Hello!" },
      ],
      temperature: 0.7,
    }),
  answered: (json) => Boolean((json as { choices?: { message?: { content?: string } }[] }).choices?.[0]?.message?.content),
  streamEnd: "data: [DONE]\n\n",
};

const RESPONSES: Api = {
  name: "responses",
  path: "/v1/responses",
  // `store` is left to its default (true): the gateway keeps each answer, Portkey forwards and keeps nothing.
  body: (model, stream) =>
    JSON.stringify({ ...(stream ? { stream: true } : {}), model, instructions: "You are a helpful assistant.", input: "Hello!", temperature: 0.7 }),
  answered: (json) => (json as { output?: { content?: { text?: string }[] }[] }).output?.[0]?.content?.[0]?.text?.includes("Hello") === true,
  // The last event is response.completed: its data line, then the blank line.
  streamEnd: "}\n\n",
};

/** The same requests with `store: false`: translation alone, as Portkey's forwarding does no storing either. */
const RESPONSES_UNSTORED: Api = {
  ...RESPONSES,
  name: "responses, store: false",
  body: (model, stream) =>
    JSON.stringify({
      ...(stream ? { stream: true } : {}),
      model,
      instructions: "You are a helpful assistant.",
      input: "Hello!",
      temperature: 0.7,
      store: false,
    }),
};

interface RoundResult {
  rps: number;
  /** The target process's CPU µs per plain (non-streamed) request under load: what its throughput costs. */
  cpuMicros: number;
  streamRps: number;
  p50: number;
  p99: number;
  ttfbP50: number;
  ttfbP99: number;
  errors: number;
  /** Stored responses only: the gateway's own mean time for the save that precedes each answer, at one connection. */
  saveMs?: number;
  /** Stored responses only: answers per save statement under load (group commit). */
  savesPerStatement?: number;
}

/** Starts a child and resolves with the first JSON line it prints. */
function startChild(command: ServerCommand, env: Record<string, string> = {}): Promise<{ child: ChildProcess; info: Record<string, unknown> }> {
  const [program, ...args] = command.argv;
  const child = spawn(program!, args, { cwd: root, env: { ...process.env, ...command.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      try {
        resolve({ child, info: JSON.parse(line) as Record<string, unknown> });
      } catch {
        // Not the ready line.
      }
    });
    child.once("exit", (code) => reject(new Error(`${command.argv.join(" ")} exited with ${code}`)));
  });
}

async function startPortkey(upstreamOrigin: string): Promise<Target> {
  const port = await unusedPort();
  const child = spawn(process.execPath, [path.join(root, "node_modules/@portkey-ai/gateway/build/start-server.js"), `--port=${port}`, "--headless"], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  });
  children.push(child);
  const target: Target = {
    name: "portkey",
    origin: `http://127.0.0.1:${port}`,
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${UPSTREAM_KEY}`,
      "x-portkey-provider": "openai",
      "x-portkey-custom-host": `${upstreamOrigin}/v1`,
    },
    model: UPSTREAM_MODEL,
    pid: child.pid,
  };
  for (let i = 0; i < 200; i++) {
    try {
      const response = await fetch(target.origin + CHAT.path, { method: "POST", headers: target.headers, body: CHAT.body(UPSTREAM_MODEL, false) });
      if (response.ok) {
        await response.text();
        return target;
      }
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("Portkey's gateway did not start");
}

/** Checks a target answers correctly before it is timed: a wrong answer fast is no result. */
async function verify(api: Api, target: Target): Promise<void> {
  const plain = await fetch(target.origin + api.path, { method: "POST", headers: target.headers, body: api.body(target.model, false) });
  const json: unknown = await plain.json();
  if (plain.status !== 200 || !api.answered(json)) throw new Error(`${target.name} ${api.name}: bad answer ${JSON.stringify(json)}`);
  const streamed = await fetch(target.origin + api.path, { method: "POST", headers: target.headers, body: api.body(target.model, true) });
  const text = await streamed.text();
  const complete = api.path === CHAT.path ? text.includes("data: [DONE]") : text.includes("event: response.completed");
  if (streamed.status !== 200 || !complete || !text.includes("Hello")) throw new Error(`${target.name} ${api.name}: bad stream ${text}`);
}

/** Requests per second, and the target process's CPU time per request answered (NaN for `direct`, whose upstream is not ours to measure). */
async function throughput(api: Api, target: Target, stream: boolean, ms: number): Promise<{ rps: number; errors: number; cpuMicros: number }> {
  const pool = new Pool(target.origin, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 });
  const payload = api.body(target.model, stream);
  let done = 0;
  let errors = 0;
  const cpuAtStart = target.pid ? processCpuMicros(target.pid) : Number.NaN;
  const started = performance.now();
  const end = started + ms;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        try {
          const response = await pool.request({ method: "POST", path: api.path, headers: target.headers, body: payload });
          const text = await response.body.text();
          if (response.statusCode === 200 && (!stream || text.endsWith(api.streamEnd))) done++;
          else errors++;
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsed = performance.now() - started;
  const cpuMicros = target.pid ? (processCpuMicros(target.pid) - cpuAtStart) / done : Number.NaN;
  await pool.close();
  return { rps: (done / elapsed) * 1000, errors, cpuMicros };
}

/** The gateway's own count of its group-committed response saves, from its `/metrics`. */
async function responseSaves(target: Target): Promise<{ statements: number; seconds: number; rows: number }> {
  const text = await (await fetch(`${target.origin}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name}\\{writer="responses"\\} (\\S+)$`, "m").exec(text)?.[1] ?? 0);
  return {
    statements: read("zero_db_group_commit_duration_seconds_count"),
    seconds: read("zero_db_group_commit_duration_seconds_sum"),
    rows: read("zero_db_group_commit_rows_total"),
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One connection, back to back: per-request time, and for streams the time to the first body byte. */
async function latency(api: Api, target: Target, stream: boolean, ms: number): Promise<{ p50: number; p99: number }> {
  const client = new Client(target.origin, { pipelining: 1, keepAliveTimeout: 60_000 });
  const payload = api.body(target.model, stream);
  const samples: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t0 = performance.now();
    const response = await client.request({ method: "POST", path: api.path, headers: target.headers, body: payload });
    let first = 0;
    for await (const _ of response.body) {
      if (first === 0) first = performance.now();
    }
    samples.push((stream ? first : performance.now()) - t0);
  }
  await client.close();
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const f = (n: number, digits = 2) => n.toFixed(digits);
/** CPU µs per request, or "-" where the process is not ours to measure (direct). */
const cpuText = (micros: number) => (Number.isNaN(micros) ? "-" : f(micros, 1));

/** Times one API through each target in interleaved rounds, then prints the medians and the goals. */
async function compare(api: Api, targets: Target[]): Promise<void> {
  console.log(`\n--- ${api.name} (${api.path}) ---`);
  for (const target of targets) {
    if (target.pid) resetPeakRss(target.pid);
    await verify(api, target);
    await throughput(api, target, false, WARMUP_MS);
    await throughput(api, target, true, WARMUP_MS / 2);
  }

  const results = new Map<Target["name"], RoundResult[]>(targets.map((t) => [t.name, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    // Each round in another order, so no target always follows the same one.
    const order = round % 2 === 1 ? targets : [...targets].reverse();
    for (const target of order) {
      const saves = api === RESPONSES && target.name === "gateway" ? () => responseSaves(target) : undefined;
      const beforeLoad = await saves?.();
      const plain = await throughput(api, target, false, THROUGHPUT_MS);
      const afterLoad = await saves?.();
      const streamed = await throughput(api, target, true, THROUGHPUT_MS / 2);
      const beforeLatency = await saves?.();
      const lat = await latency(api, target, false, LATENCY_MS);
      const afterLatency = await saves?.();
      const ttfb = await latency(api, target, true, LATENCY_MS);
      const result = {
        rps: plain.rps,
        cpuMicros: plain.cpuMicros,
        streamRps: streamed.rps,
        p50: lat.p50,
        p99: lat.p99,
        ttfbP50: ttfb.p50,
        ttfbP99: ttfb.p99,
        errors: plain.errors + streamed.errors,
        ...(beforeLoad && afterLoad && beforeLatency && afterLatency
          ? {
              saveMs: ((afterLatency.seconds - beforeLatency.seconds) / (afterLatency.statements - beforeLatency.statements)) * 1000,
              savesPerStatement: (afterLoad.rows - beforeLoad.rows) / (afterLoad.statements - beforeLoad.statements),
            }
          : {}),
      };
      results.get(target.name)!.push(result);
      const saveText = result.saveMs === undefined ? "" : `  save ${f(result.saveMs, 3)} ms, ${f(result.savesPerStatement!, 1)} answers/statement under load`;
      console.log(
        `round ${round} ${target.name.padEnd(10)} ${f(result.rps, 0).padStart(6)} req/s  ${cpuText(result.cpuMicros).padStart(6)} µs CPU/req  ${f(result.streamRps, 0).padStart(6)} streams/s  ` +
          `p50 ${f(result.p50, 3)} ms  p99 ${f(result.p99, 3)} ms  ttfb p50 ${f(result.ttfbP50, 3)} ms  p99 ${f(result.ttfbP99, 3)} ms  errors ${result.errors}${saveText}`,
      );
    }
  }

  const summary = (name: Target["name"]) => {
    const rows = results.get(name)!;
    return {
      rps: median(rows.map((r) => r.rps)),
      cpuMicros: median(rows.map((r) => r.cpuMicros)),
      streamRps: median(rows.map((r) => r.streamRps)),
      p50: median(rows.map((r) => r.p50)),
      p99: median(rows.map((r) => r.p99)),
      ttfbP50: median(rows.map((r) => r.ttfbP50)),
      ttfbP99: median(rows.map((r) => r.ttfbP99)),
      errors: rows.reduce((n, r) => n + r.errors, 0),
    };
  };
  const direct = summary("direct");
  const gateway = summary("gateway");
  const portkey = summary("portkey");
  const hasNodeProxy = results.has("node-proxy");
  const nodeProxy = hasNodeProxy ? summary("node-proxy") : undefined;
  const rssOf = (name: Target["name"]) => peakRssMb(targets.find((t) => t.name === name)!.pid!);
  const nodeProxyRss = hasNodeProxy ? rssOf("node-proxy") : undefined;
  const gatewayRss = rssOf("gateway");
  const portkeyRss = rssOf("portkey");

  console.log(`\nmedians of ${ROUNDS} interleaved rounds; ${CONCURRENCY} connections for throughput, one for latency and first byte`);
  console.log("target       req/s  CPU µs/req  streams/s  p50 ms   p99 ms   ttfb p50  ttfb p99  peak RSS MB  errors");
  const rows: [string, ReturnType<typeof summary>, number | undefined][] = [["direct", direct, undefined]];
  if (nodeProxy) rows.push(["node-proxy", nodeProxy, nodeProxyRss]);
  rows.push(["gateway", gateway, gatewayRss], ["portkey", portkey, portkeyRss]);
  for (const [name, s, rss] of rows) {
    console.log(
      `${name.padEnd(11)} ${f(s.rps, 0).padStart(6)}  ${cpuText(s.cpuMicros).padStart(10)}  ${f(s.streamRps, 0).padStart(9)}  ${f(s.p50, 3).padStart(7)}  ${f(s.p99, 3).padStart(7)}  ${f(s.ttfbP50, 3).padStart(8)}  ${f(s.ttfbP99, 3).padStart(8)}  ${rss ? f(rss, 1).padStart(11) : "          -"}  ${s.errors}`,
    );
  }
  // Paired within each round, so a burst of load from elsewhere on the machine weighs on both sides.
  const perRound = (peer: Target["name"]) => results.get("gateway")!.map((g, i) => g.rps / results.get(peer)![i]!.rps);
  const ratios = perRound("portkey");
  const addedP50 = results.get("gateway")!.map((g, i) => g.p50 - results.get("direct")![i]!.p50);
  console.log(
    `\nper round: gateway/Portkey throughput ${ratios.map((r) => `${f(r)}×`).join(", ")}; gateway added p50 ${addedP50.map((a) => `${f(a, 3)} ms`).join(", ")}`,
  );
  /** [label, met, what was measured] */
  const goals: [string, boolean, string][] = [
    [`throughput ≥ 4× Portkey's`, median(ratios) >= 4, `${f(median(ratios))}× (median of per-round ratios)`],
    [`added p50 < 0.3 ms`, gateway.p50 - direct.p50 < 0.3, `${f(gateway.p50 - direct.p50, 3)} ms`],
    [`added p99 < 1 ms`, gateway.p99 - direct.p99 < 1, `${f(gateway.p99 - direct.p99, 3)} ms`],
    [`first-byte overhead < 1 ms`, gateway.ttfbP50 - direct.ttfbP50 < 1, `${f(gateway.ttfbP50 - direct.ttfbP50, 3)} ms`],
    [`peak RSS < 100 MB`, gatewayRss < 100, `${f(gatewayRss, 1)} MB`],
  ];
  if (api === CHAT && nodeProxy && nodeProxyRss !== undefined) {
    const floor = perRound("node-proxy");
    goals.push(
      [`throughput ≥ 0.8× the least Node proxy's`, median(floor) >= 0.8, `${f(median(floor))}× (per round ${floor.map((r) => `${f(r)}×`).join(", ")})`],
      [
        `peak RSS within 15 MB of the least Node proxy`,
        gatewayRss - nodeProxyRss <= 15,
        `${f(gatewayRss - nodeProxyRss, 1)} MB above its ${f(nodeProxyRss, 1)} MB`,
      ],
    );
  }
  console.log("\ngoals");
  for (const [label, met, shown] of goals) console.log(`  ${met ? "met " : "MISS"}  ${label}: ${shown}`);
  console.log(
    `  (Portkey: added p50 ${f(portkey.p50 - direct.p50, 3)} ms, p99 ${f(portkey.p99 - direct.p99, 3)} ms, first byte +${f(portkey.ttfbP50 - direct.ttfbP50, 3)} ms, peak RSS ${f(portkeyRss, 1)} MB; streams/s gateway ${f(gateway.streamRps / portkey.streamRps)}× Portkey)`,
  );
  if (api !== CHAT && nodeProxy) {
    const floor = perRound("node-proxy");
    console.log(
      `  (the least Node proxy${api === RESPONSES ? ", storing each answer before it answers" : ""}: added p50 ${f(nodeProxy.p50 - direct.p50, 3)} ms, ` +
        `p99 ${f(nodeProxy.p99 - direct.p99, 3)} ms, first byte +${f(nodeProxy.ttfbP50 - direct.ttfbP50, 3)} ms; gateway throughput ${f(median(floor))}× its)`,
    );
  }
  const saves = results.get("gateway")!.filter((r) => r.saveMs !== undefined);
  if (saves.length > 0) {
    // What the gateway's own metrics say of the Postgres write each stored answer waits for (zero_db_group_commit_*).
    console.log(
      `  (of the gateway's added time, its save of each answer before it answers: mean ${f(median(saves.map((r) => r.saveMs!)), 3)} ms at one connection; ` +
        `under load ${f(median(saves.map((r) => r.savesPerStatement!)), 1)} answers per INSERT)`,
    );
  }
}

async function main(): Promise<void> {
  const { info: upstreamInfo } = await startChild({ argv: [process.execPath, "--import", "tsx", "test/bench/support/chat-instant-upstream.ts"], env: {} });
  const upstreamOrigin = `http://127.0.0.1:${upstreamInfo.port as number}`;
  const database = await freshBenchDatabase("chat");
  let gatewayPid: number | undefined;
  try {
    const gatewayCommand = await serverCommand("test/bench/support/chat-gateway-server.ts");
    if (PROFILE_DIR) gatewayCommand.argv.splice(1, 0, "--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`);
    const { child: gatewayChild, info: gatewayInfo } = await startChild(gatewayCommand, {
      DATABASE_URL: database.url,
      ZERO_UPSTREAMS: JSON.stringify([{ name: "bench", baseUrl: `${upstreamOrigin}/v1`, apiKey: UPSTREAM_KEY, model: UPSTREAM_MODEL }]),
      ZERO_FREE_POOL_DAILY_REQUESTS: "1000000000",
      // Request logs at info would measure the log sink; stage workers are not part of chat.
      LOG_LEVEL: "warn",
      ZERO_WORKER_CONCURRENCY: "0",
    });
    gatewayPid = gatewayChild.pid;
    const gatewayUrl = new URL(gatewayInfo.url as string);
    const { child: nodeProxyChild, info: nodeProxyInfo } = await startChild(await serverCommand("test/bench/support/chat-node-proxy.ts"), {
      UPSTREAM_ORIGIN: upstreamOrigin,
      UPSTREAM_MODEL,
    });
    const targets: Target[] = [
      {
        name: "direct",
        origin: upstreamOrigin,
        headers: { "content-type": "application/json", authorization: `Bearer ${UPSTREAM_KEY}` },
        model: UPSTREAM_MODEL,
      },
      {
        name: "node-proxy",
        origin: new URL(nodeProxyInfo.url as string).origin,
        headers: { "content-type": "application/json" },
        model: "project-zero",
        pid: nodeProxyChild.pid,
      },
      {
        name: "gateway",
        origin: gatewayUrl.origin,
        headers: { "content-type": "application/json", authorization: `Bearer ${gatewayInfo.apiKey as string}` },
        model: "project-zero",
        pid: gatewayChild.pid,
      },
      await startPortkey(upstreamOrigin),
    ];
    if (APIS.includes("chat")) await compare(CHAT, targets);
    if (APIS.includes("responses")) {
      // Its floor stores each answer as the gateway does: the least Node proxy with one INSERT per answer.
      const { child, info } = await startChild(await serverCommand("test/bench/support/chat-node-proxy.ts"), {
        UPSTREAM_ORIGIN: upstreamOrigin,
        UPSTREAM_MODEL,
        STORE_DATABASE_URL: database.url,
      });
      const storingProxy: Target = {
        name: "node-proxy",
        origin: new URL(info.url as string).origin,
        headers: targets[1]!.headers,
        model: "project-zero",
        pid: child.pid,
      };
      await compare(
        RESPONSES,
        targets.map((target) => (target.name === "node-proxy" ? storingProxy : target)),
      );
      child.kill("SIGTERM");
    }
    if (APIS.includes("responses-unstored")) await compare(RESPONSES_UNSTORED, targets);
  } finally {
    for (const child of children) child.kill("SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (PROFILE_DIR && gatewayPid) {
      for (let waited = 0; !profileOf(PROFILE_DIR, gatewayPid) && waited < 10_000; waited += 200) await new Promise((resolve) => setTimeout(resolve, 200));
      const file = profileOf(PROFILE_DIR, gatewayPid);
      console.log(file ? `\ngateway CPU profile (${file}), self time:\n${topSelfTime(file).join("\n")}` : "\nthe gateway wrote no CPU profile");
    }
    await database.drop();
  }
}

await main();
