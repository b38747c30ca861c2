import http from "node:http";
import type { AddressInfo } from "node:net";
import { Pool } from "undici";

/**
 * The floor the gateway's memory is judged against: the least a Node proxy
 * for this API can do. It rewrites `model`, forwards with a keep-alive undici
 * Pool and relays the answer; no keys, no free pool, no logs, no errors of
 * ours. Built and started exactly as the gateway is (same bundler, same Node
 * and V8 flags), so what the gateway uses above this is the gateway's own.
 * Configured by UPSTREAM_ORIGIN and UPSTREAM_MODEL; prints `{"url"}` when listening.
 */
const upstream = new Pool(process.env.UPSTREAM_ORIGIN!, { connections: 128, keepAliveTimeout: 60_000 });
const model = process.env.UPSTREAM_MODEL!;

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { model: string };
    body.model = model;
    upstream
      .request({ method: "POST", path: "/v1/chat/completions", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
      .then(async (answer) => {
        res.writeHead(answer.statusCode, { "content-type": String(answer.headers["content-type"]) });
        for await (const piece of answer.body) res.write(piece);
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
