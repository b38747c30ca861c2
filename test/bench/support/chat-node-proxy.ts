import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { Pool } from "undici";

/**
 * The floor the gateway is judged against: the least a Node proxy for these
 * APIs can do. It rewrites `model`, forwards to the same path upstream (chat
 * completions, or the Responses API to the upstream's own, as Portkey does)
 * with a keep-alive undici Pool and relays the answer; no keys, no free
 * pool, no logs, no errors of ours. Built and started exactly as the gateway
 * is (same bundler, same Node and V8 flags), so what the gateway uses above
 * this is the gateway's own.
 *
 * With STORE_DATABASE_URL it is also the floor for a stored response: a
 * Responses answer whose request does not say `store: false` is written to
 * Postgres (one INSERT of the answer, from a pool, a prepared statement)
 * before it is answered, as the gateway commits each stored answer before it
 * answers. Configured by UPSTREAM_ORIGIN and UPSTREAM_MODEL; prints
 * `{"url"}` when listening.
 */
const upstream = new Pool(process.env.UPSTREAM_ORIGIN!, { connections: 128, keepAliveTimeout: 60_000 });
const model = process.env.UPSTREAM_MODEL!;
const database = process.env.STORE_DATABASE_URL ? new pg.Pool({ connectionString: process.env.STORE_DATABASE_URL, max: 10 }) : undefined;
await database?.query("CREATE TABLE IF NOT EXISTS proxy_responses (id text PRIMARY KEY, answer text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");

function store(answer: string): Promise<unknown> {
  return database!.query({ name: "store", text: "INSERT INTO proxy_responses (id, answer) VALUES ($1, $2)", values: [randomUUID(), answer] });
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string; store?: boolean };
    body.model = model;
    const stored = database !== undefined && req.url === "/v1/responses" && body.store !== false;
    upstream
      .request({ method: "POST", path: req.url!, headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
      .then(async (answer) => {
        res.writeHead(answer.statusCode, { "content-type": String(answer.headers["content-type"]) });
        if (!stored) {
          for await (const piece of answer.body) res.write(piece);
        } else {
          // As the gateway: a plain answer is sent once stored; a stream's pieces go out as they come, but the last
          // (which ends `response.completed`) once the whole is stored.
          const pieces: Buffer[] = [];
          for await (const piece of answer.body) {
            if (pieces.length > 0 && answer.headers["content-type"] === "text/event-stream") res.write(pieces.at(-1));
            pieces.push(piece as Buffer);
          }
          const whole = Buffer.concat(pieces);
          await store(whole.toString("utf8"));
          res.write(answer.headers["content-type"] === "text/event-stream" ? pieces.at(-1) : whole);
        }
        res.end();
      })
      .catch(() => res.writeHead(502).end());
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
});
process.on("SIGTERM", () => process.exit(0));
