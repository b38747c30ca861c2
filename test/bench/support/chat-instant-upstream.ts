import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * The benchmark's upstream: an OpenAI-compatible server that answers at once,
 * so what is measured is the gateway in front of it. Run as its own process;
 * prints `{"port": n}` when listening.
 */
const completion = JSON.stringify({
  id: "chatcmpl-upstream",
  object: "chat.completion",
  created: 1_763_000_000,
  model: "bench-upstream-model",
  system_fingerprint: "fp_bench",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello! How can I help you today?", refusal: null }, logprobs: null, finish_reason: "stop" }],
  usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 },
});

const chunk = (delta: object, finish: string | null) =>
  `data: ${JSON.stringify({
    id: "chatcmpl-upstream",
    object: "chat.completion.chunk",
    created: 1_763_000_000,
    model: "bench-upstream-model",
    system_fingerprint: "fp_bench",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  })}\n\n`;
const streamBody = [
  chunk({ role: "assistant", content: "" }, null),
  ...["Hello", "!", " How", " can", " I", " help", "?"].map((content) => chunk({ content }, null)),
  chunk({}, "stop"),
  "data: [DONE]\n\n",
];

const server = http.createServer((req, res) => {
  let size = 0;
  let streaming = false;
  req.on("data", (piece: Buffer) => {
    // `"stream":true` is near the start of every benchmark body; no need to parse it all.
    if (size === 0) streaming = piece.includes('"stream":true');
    size += piece.length;
  });
  req.on("end", () => {
    if (streaming) {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      // One write per event, as a model server sends them.
      for (const event of streamBody) res.write(event);
      res.end();
    } else {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(completion) });
      res.end(completion);
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: (server.address() as AddressInfo).port }));
});
process.on("SIGTERM", () => process.exit(0));
