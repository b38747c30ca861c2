import { createClient } from "@connectrpc/connect";
import type OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { ChatService } from "../../gen/zero/v1/chat_pb.js";
import { rpcTransport } from "../support/transports.js";
import { createAccountWithKey } from "../support/accounts.js";
import { chunk, completion, FakeUpstream, ownId, reply, sleep, stream } from "./support/fake-upstream.js";
import { openAiClient, startGateway, useSdkGateway } from "./support/gateway.js";

// OpenAI-compatible servers that do not speak quite like OpenAI, each as a client meets it through the gateway:
// whatever shape the provider used, the client gets OpenAI's, and the SDKs read it.
describe("providers that bend OpenAI's format", () => {
  const gateway = useSdkGateway({ embeddingModel: "secret-embed" });
  let client: OpenAI;
  beforeAll(() => {
    client = openAiClient(gateway.app, gateway.apiKey);
  });
  const tools = [{ type: "function" as const, name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: false }];
  const usage = { ...chunk({}), choices: [], usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 } };

  it("numbers streamed tool calls from 0 when the provider starts at 1 after text (proxies in front of Claude)", async () => {
    gateway.upstream.next(
      stream([
        chunk({ role: "assistant", content: "Let me look." }),
        chunk({ tool_calls: [{ index: 1, id: "toolu_01", type: "function", function: { name: "get_weather", arguments: "" } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: '"Paris"}' } }] }),
        chunk({}, "tool_calls"),
        usage,
      ]),
    );
    const final = await client.responses.stream({ model: "project-zero", input: "Weather in Paris?", tools }).finalResponse();
    expect(final.status).toBe("completed");
    expect(final.output.map((item) => item.type)).toEqual(["message", "function_call"]);
    expect(final.output[1]).toMatchObject({ type: "function_call", name: "get_weather", call_id: ownId("toolu_01"), arguments: '{"city":"Paris"}' });
  });

  it("keeps one call together when the provider gives its deltas no index (Gemini's compatible endpoint)", async () => {
    const deltas = [
      chunk({ role: "assistant", tool_calls: [{ id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } }] }),
      chunk({ tool_calls: [{ function: { arguments: '{"ci' } }] }),
      chunk({ tool_calls: [{ function: { arguments: 'ty": "Paris"}' } }] }),
      chunk({ tool_calls: [{ id: "call_b", function: { name: "get_time", arguments: "{}" } }] }),
      chunk({}, "tool_calls"),
      usage,
    ];
    gateway.upstream.next(stream(deltas), stream(deltas));
    const final = await client.responses.stream({ model: "project-zero", input: "Weather?", tools }).finalResponse();
    expect(final.output).toEqual([
      expect.objectContaining({ type: "function_call", call_id: ownId("call_a"), name: "get_weather", arguments: '{"city": "Paris"}' }),
      expect.objectContaining({ type: "function_call", call_id: ownId("call_b"), name: "get_time", arguments: "{}" }),
    ]);
    // Chat completions streams carry OpenAI's index and type on every call, which the SDK's stream helper insists on.
    const chat = await client.chat.completions.stream({ model: "project-zero", messages: [{ role: "user", content: "Weather?" }] }).finalChatCompletion();
    expect(chat.choices[0]!.message.tool_calls).toEqual([
      expect.objectContaining({
        id: ownId("call_a"),
        type: "function",
        function: expect.objectContaining({ name: "get_weather", arguments: '{"city": "Paris"}' }),
      }),
      expect.objectContaining({ id: ownId("call_b"), type: "function", function: expect.objectContaining({ name: "get_time", arguments: "{}" }) }),
    ]);
  });

  it("keeps one call together when a server repeats its name on every delta and gives no index or id", async () => {
    gateway.upstream.next(
      stream([
        chunk({ role: "assistant", tool_calls: [{ type: "function", function: { name: "get_weather", arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ type: "function", function: { name: "get_weather", arguments: '"Paris"}' } }] }),
        chunk({}, "tool_calls"),
        usage,
      ]),
    );
    const chat = await client.chat.completions.stream({ model: "project-zero", messages: [{ role: "user", content: "Weather?" }] }).finalChatCompletion();
    expect(chat.choices[0]!.message.tool_calls).toEqual([
      expect.objectContaining({ type: "function", function: expect.objectContaining({ name: "get_weather", arguments: '{"city":"Paris"}' }) }),
    ]);
  });

  it("gives text parts as one string, arguments as a JSON string and a float created as whole seconds", async () => {
    const odd = completion(null, {
      created: 1_763_000_000.789,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: [
              { type: "thinking", thinking: [{ type: "text", text: "secret thoughts" }] },
              { type: "text", text: "Hello " },
              { type: "text", text: "parts" },
            ],
            tool_calls: [{ id: "call_1", function: { name: "get_weather", arguments: { city: "Paris" } } }],
          },
          finish_reason: "tool_calls",
        },
      ],
    });
    gateway.upstream.next(reply(odd), reply(odd), reply(odd));
    const chat = await client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "hi" }] });
    expect(chat.created).toBe(1_763_000_000);
    expect(chat.choices[0]!.message.content).toBe("Hello parts");
    expect(chat.choices[0]!.message.tool_calls).toEqual([
      { id: ownId("call_1"), type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
    ]);
    const response = await client.responses.create({ model: "project-zero", input: "hi", tools });
    expect(response.output).toEqual([
      expect.objectContaining({ type: "message", content: [expect.objectContaining({ type: "output_text", text: "Hello parts" })] }),
      expect.objectContaining({ type: "function_call", arguments: '{"city":"Paris"}' }),
    ]);
    // The typed RPC message takes them too (it refused a fraction of a second, and an object for arguments, as an internal error).
    const rpc = createClient(ChatService, rpcTransport(gateway.app.url, "connect"));
    const { completion: typed } = await rpc.createChatCompletion(
      { params: { model: "project-zero", messages: [{ role: "user", content: { kind: { case: "stringValue", value: "hi" } } }] } },
      { headers: { authorization: `Bearer ${gateway.apiKey}` } },
    );
    expect(typed?.created).toBe(1_763_000_000);
    expect(typed?.choices[0]?.message?.toolCalls[0]?.function?.arguments).toBe('{"city":"Paris"}');
  });

  it("sends Mistral, which refuses fields it does not know (422 extra_forbidden), a streamed Responses call without them, and from then on never", async () => {
    // Mistral's chat completions fields; any other is 422, as pydantic words it.
    const known = new Set([
      "model",
      "messages",
      "stream",
      "temperature",
      "top_p",
      "max_tokens",
      "tools",
      "tool_choice",
      "response_format",
      "stop",
      "random_seed",
    ]);
    const mistral = (exchange: Parameters<Parameters<typeof gateway.upstream.otherwise>[0]>[0]) => {
      const extra = Object.keys(exchange.body).filter((field) => !known.has(field));
      if (extra.length > 0) {
        const detail = extra.map((field) => ({
          type: "extra_forbidden",
          loc: ["body", field],
          msg: "Extra inputs are not permitted",
          input: exchange.body[field],
        }));
        return reply({ object: "error", message: { detail }, type: "invalid_request_error", param: null, code: null }, 422)(exchange);
      }
      return stream([chunk({ role: "assistant", content: "Bonjour" }), chunk({}, "stop"), usage])(exchange);
    };
    gateway.upstream.otherwise(mistral);
    const ask = () => client.responses.stream({ model: "project-zero", input: "Hello", max_output_tokens: 50 }).finalResponse();
    expect((await ask()).output_text).toBe("Bonjour");
    const [refused, sent] = gateway.upstream.requests;
    expect(Object.keys(refused!.body)).toEqual(expect.arrayContaining(["stream_options", "max_completion_tokens"]));
    expect(sent!.body).toMatchObject({ max_tokens: 50, stream: true });
    expect(sent!.body).not.toHaveProperty("stream_options");
    expect(sent!.body).not.toHaveProperty("max_completion_tokens");
    // Learnt: the next request goes without them at once.
    expect((await ask()).output_text).toBe("Bonjour");
    expect(gateway.upstream.requests).toHaveLength(3);
    // A field that shapes the answer is never dropped: the request is refused, as before.
    const structured = await client.chat.completions
      .create({ model: "project-zero", messages: [{ role: "user", content: "hi" }], logprobs: true })
      .catch((error: unknown) => error);
    expect(structured).toMatchObject({ status: 400 });
    expect(gateway.upstream.requests).toHaveLength(4);
  });

  it("takes a stream that ends after its finish_reason without [DONE] as whole, and drops Azure's empty opening chunk", async () => {
    gateway.upstream.next(
      stream(
        [
          { id: "", object: "", created: 0, model: "", choices: [], prompt_filter_results: [{ prompt_index: 0 }] },
          chunk({ role: "assistant", content: "All " }),
          chunk({ content: "done." }, "stop"),
          usage,
        ],
        { done: false },
      ),
    );
    const chunks = [];
    for await (const piece of await client.chat.completions.create({
      model: "project-zero",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    })) {
      chunks.push(piece);
    }
    expect(chunks.map((piece) => piece.choices[0]?.delta.content ?? null)).toEqual(["All ", "done.", null]);
    expect(chunks.every((piece) => piece.object === "chat.completion.chunk" && piece.created > 0)).toBe(true);
    expect(chunks.at(-1)!.usage).toMatchObject({ total_tokens: 9 });
  });

  it("still fails a stream that ends before its finish_reason", async () => {
    gateway.upstream.next(stream([chunk({ role: "assistant", content: "All " })], { done: false }));
    const read = async () => {
      for await (const _ of await client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "hi" }], stream: true })) void _;
    };
    await expect(read()).rejects.toThrow(/incomplete/);
  });

  it("puts embeddings in the order of the inputs by their index, and reads a provider's base64", async () => {
    const floats = (values: number[]) => Buffer.from(new Float32Array(values).buffer).toString("base64");
    gateway.upstream.next(
      reply({
        object: "list",
        data: [
          { object: "embedding", index: 2, embedding: [0.5, -0.25] },
          { object: "embedding", index: 0, embedding: floats([2.5, -2.25]) },
          { object: "embedding", index: 1, embedding: [1, 2] },
        ],
        model: "secret-embed",
      }),
    );
    const answer = await client.embeddings.create({ model: "project-zero", input: ["first", "second", "third"], encoding_format: "float" });
    expect(answer.data.map((item) => [item.index, item.embedding])).toEqual([
      [0, [2.5, -2.25]],
      [1, [1, 2]],
      [2, [0.5, -0.25]],
    ]);
  });
});

describe("an upstream whose base URL carries a query (Azure's api-version)", () => {
  it("sends the query with every request rather than dropping it", async () => {
    const upstream = await FakeUpstream.start();
    const app = await startGateway([`${upstream.url}?api-version=2024-10-21`]);
    try {
      upstream.next(reply(completion("ok")));
      const client = openAiClient(app, (await createAccountWithKey(app, ["chat"])).apiKey);
      await client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "hi" }] });
      expect(upstream.requests[0]!.path).toMatch(/\/chat\/completions\?api-version=2024-10-21$/);
    } finally {
      await app.close();
      await upstream.close();
    }
  });
});

describe("an upstream that refuses unknown fields, asked twice at once before it taught the instance", () => {
  it("answers both: the one sent with the field while the other learnt is sent again too", async () => {
    const upstream = await FakeUpstream.start();
    const app = await startGateway([upstream]);
    try {
      upstream.otherwise(async (exchange) => {
        if ("user" in exchange.body) {
          await sleep(200);
          const detail = [{ type: "extra_forbidden", loc: ["body", "user"], msg: "Extra inputs are not permitted", input: exchange.body.user }];
          return reply({ object: "error", message: { detail }, type: "invalid_request_error", param: null, code: null }, 422)(exchange);
        }
        return reply(completion("ok"))(exchange);
      });
      const client = openAiClient(app, (await createAccountWithKey(app, ["chat"])).apiKey);
      const ask = () => client.chat.completions.create({ model: "project-zero", messages: [{ role: "user", content: "hi" }], user: "end-user-7" });
      const answers = await Promise.all([ask(), ask()]);
      expect(answers.map((answer) => answer.choices[0]!.message.content)).toEqual(["ok", "ok"]);
    } finally {
      await app.close();
      await upstream.close();
    }
  });
});
