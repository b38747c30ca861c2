import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * The benchmark's upstream: an OpenAI-compatible server that answers at once,
 * so what is measured is the gateway in front of it. It serves chat
 * completions and, for peers that forward the Responses API as it is (Portkey,
 * and "direct"), `/v1/responses` with the same words. Run as its own process;
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

const words = ["Hello", "!", " How", " can", " I", " help", "?"];

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
  ...words.map((content) => chunk({ content }, null)),
  chunk({}, "stop"),
  "data: [DONE]\n\n",
];

const message = {
  id: "msg_upstream",
  type: "message",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text: words.join(""), annotations: [] }],
};
const response = (status: string, output: object[]) => ({
  id: "resp_upstream",
  object: "response",
  created_at: 1_763_000_000,
  status,
  model: "bench-upstream-model",
  output,
  usage: status === "completed" ? { input_tokens: 12, output_tokens: 9, total_tokens: 21 } : null,
});
const responseJson = JSON.stringify(response("completed", [message]));
let sequence = 0;
const event = (type: string, fields: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...fields, sequence_number: sequence++ })}\n\n`;
const part = { type: "output_text", text: "", annotations: [] };
function responseStream(): string[] {
  sequence = 0;
  const at = { item_id: message.id, output_index: 0, content_index: 0 };
  return [
    event("response.created", { response: response("in_progress", []) }),
    event("response.in_progress", { response: response("in_progress", []) }),
    event("response.output_item.added", { output_index: 0, item: { ...message, status: "in_progress", content: [] } }),
    event("response.content_part.added", { ...at, part }),
    ...words.map((delta) => event("response.output_text.delta", { ...at, delta })),
    event("response.output_text.done", { ...at, text: words.join("") }),
    event("response.content_part.done", { ...at, part: message.content[0]! }),
    event("response.output_item.done", { output_index: 0, item: message }),
    event("response.completed", { response: response("completed", [message]) }),
  ];
}

const server = http.createServer((req, res) => {
  const responsesApi = req.url === "/v1/responses";
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
      for (const piece of responsesApi ? responseStream() : streamBody) res.write(piece);
      res.end();
    } else {
      const answer = responsesApi ? responseJson : completion;
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) });
      res.end(answer);
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: (server.address() as AddressInfo).port }));
});
process.on("SIGTERM", () => process.exit(0));
