import fs from "node:fs";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/** What the slow-connection phase saw: descriptors of the server before, at the peak and after, and a normal client meanwhile. */
export interface SlowConnectionsResult {
  opened: number;
  baselineFds: number;
  peakFds: number;
  afterFds: number;
  /** From the last slow connection opened until the server's descriptors were back at baseline (+ slack). */
  drainedAfterMs: number | undefined;
  healthChecks: number;
  healthFailures: number;
  healthP99Ms: number;
}

/** The ways a client can stall that the server must end by its deadlines. */
const STALLS: readonly string[] = [
  "P", // one byte of the HTTP/2 preface
  "PRI * HTTP/2.0\r\n", // part of it
  "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", // all of it, then nothing: an h2c session that never opens a stream
  "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ", // HTTP/1.1 headers that never finish
  "POST /api/execution HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{", // a body that stalls
];

function openFds(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

/**
 * Opens `count` stalled connections to the server (a mix of every kind in
 * STALLS), holds them open from our side, and checks that the server closes
 * them all by its own deadlines, its descriptors returning to baseline within
 * `deadlineMs` (plus Node's checking interval), while a normal client polling
 * /healthz every 100 ms is served throughout.
 */
export async function slowConnections(url: string, pid: number, options: { count: number; deadlineMs: number }): Promise<SlowConnectionsResult> {
  const { hostname, port } = new URL(url);
  const baselineFds = openFds(pid);
  let polling = true;
  const latencies: number[] = [];
  let healthFailures = 0;
  const poller = (async () => {
    while (polling) {
      const started = performance.now();
      try {
        const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
        if (response.status !== 200) healthFailures++;
        await response.arrayBuffer();
      } catch {
        healthFailures++;
      }
      latencies.push(performance.now() - started);
      await sleep(100);
    }
  })();

  const sockets: net.Socket[] = [];
  for (let i = 0; i < options.count; i++) {
    const socket = net.connect(Number(port), hostname);
    socket.on("error", () => {});
    socket.on("data", () => {});
    socket.once("connect", () => socket.write(STALLS[i % STALLS.length]!));
    sockets.push(socket);
    // Opened in bursts, as a flood would, without starving the poller.
    if (i % 100 === 99) await sleep(10);
  }
  const openedAt = performance.now();
  let peakFds = openFds(pid);
  let drainedAfterMs: number | undefined;
  const giveUpAt = openedAt + options.deadlineMs + 5_000;
  while (performance.now() < giveUpAt) {
    const fds = openFds(pid);
    peakFds = Math.max(peakFds, fds);
    // A little slack: the server's own pooled database connections come and go.
    if (fds <= baselineFds + 5 && peakFds > baselineFds + 5) {
      drainedAfterMs = performance.now() - openedAt;
      break;
    }
    await sleep(100);
  }
  const afterFds = openFds(pid);
  polling = false;
  await poller;
  for (const socket of sockets) socket.destroy();
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    opened: options.count,
    baselineFds,
    peakFds,
    afterFds,
    drainedAfterMs,
    healthChecks: latencies.length,
    healthFailures,
    healthP99Ms: sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? NaN,
  };
}
