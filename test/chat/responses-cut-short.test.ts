import { createOpenAI } from "@ai-sdk/openai";
import { convertToModelMessages, readUIMessageStream, streamText, type UIMessage } from "ai";
import type OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp } from "../support/app.js";
import { chunk, completion, FakeUpstream, reply, sleep, stream, textChunks, ownId } from "./support/fake-upstream.js";
import { openAiClient, upstreamsEnv, useSdkGateway, WEATHER_TOOLS } from "./support/gateway.js";

type StreamEvent = Record<string, unknown> & { type: string };

// A streamed response hands its client the response's and items' ids in its first events; a stream that ends
// before its answer is whole (the client stopped it, or the upstream broke) keeps what was answered under them,
// so the client can still continue the conversation it was told is stored.
describe("/v1/responses streams cut short", () => {
  const gateway = useSdkGateway();
  let client: OpenAI;
  beforeAll(() => {
    client = openAiClient(gateway.app, gateway.apiKey);
  });

  const tools = WEATHER_TOOLS;

  /** "Once upon", then nothing more while the connection stays open: a long answer the client will stop. */
  const storyBegun = () =>
    stream([chunk({ role: "assistant", content: "" }), chunk({ content: "Once upon" }), chunk({ content: " a time" })], { hangAfter: 2 });

  function post(body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
    return fetch(`${gateway.app.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${gateway.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "project-zero", ...body }),
      signal,
    });
  }

  /** The stream's events as they come, until the one `until` accepts, after which the client hangs up; or all of them. */
  async function streamEvents(body: Record<string, unknown>, until?: (event: StreamEvent) => boolean): Promise<StreamEvent[]> {
    const leaving = new AbortController();
    const response = await post({ ...body, stream: true }, leaving.signal);
    expect(response.status).toBe(200);
    const events: StreamEvent[] = [];
    for await (const event of eventsOf(response)) {
      events.push(event);
      if (until?.(event)) break;
    }
    leaving.abort();
    return events;
  }

  const responseIdOf = (events: StreamEvent[]) => (events.find((event) => event.type === "response.created")!.response as { id: string }).id;

  /** The stored response, once the stream the client left has been dealt with (its save does not wait for the client). */
  async function storedResponse(id: string): Promise<OpenAI.Responses.Response> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await client.responses.retrieve(id);
      } catch (error) {
        if (attempt === 40) throw error;
        await sleep(25);
      }
    }
  }

  it("keeps a stream its client stopped after the first words as a cancelled response, continued by item reference and by previous_response_id", async () => {
    gateway.upstream.next(storyBegun());
    const events = await streamEvents({ input: "Tell me a story" }, (event) => event.type === "response.output_text.delta");
    const id = responseIdOf(events);
    const messageId = (events.find((event) => event.type === "response.output_item.added")!.item as { id: string }).id;
    await gateway.upstream.requests[0]!.aborted;

    const stored = await storedResponse(id);
    expect(stored).toMatchObject({ id, status: "cancelled", error: null, store: true });
    expect(stored.output).toEqual([
      {
        type: "message",
        id: messageId,
        status: "incomplete",
        role: "assistant",
        content: [{ type: "output_text", text: "Once upon", annotations: [], logprobs: [] }],
      },
    ]);

    gateway.upstream.next(reply(completion("…there was a fox.")), reply(completion("…there was a fox.")));
    const referenced = await post({
      input: [
        { role: "user", content: "Tell me a story" },
        { type: "item_reference", id: messageId },
        { role: "user", content: "Go on" },
      ],
    });
    expect(referenced.status).toBe(200);
    const continued = await client.responses.create({ model: "project-zero", previous_response_id: id, input: "Go on" });
    expect(continued.output_text).toBe("…there was a fox.");
    for (const request of gateway.upstream.requests.slice(1)) {
      expect(request.body.messages).toEqual([
        { role: "user", content: "Tell me a story" },
        { role: "assistant", content: "Once upon" },
        { role: "user", content: "Go on" },
      ]);
    }
  });

  it("keeps a stream whose upstream broke as a failed response carrying the error its client was sent", async () => {
    gateway.upstream.next(stream(textChunks(["Once", " upon", " a time"]), { dropAfter: 2 }));
    const events = await streamEvents({ input: "Tell me a story" });
    const failure = events.at(-1)!;
    expect(failure).toMatchObject({ type: "error", code: expect.any(String), message: expect.any(String) });
    expect(events.filter((event) => event.type === "error")).toHaveLength(1);

    const stored = await client.responses.retrieve(responseIdOf(events));
    expect(stored).toMatchObject({ status: "failed", error: { code: failure.code, message: failure.message } });
    expect(stored.output).toEqual([expect.objectContaining({ type: "message", status: "incomplete", content: [expect.objectContaining({ text: "Once" })] })]);
  });

  it("keeps the calls begun before the client left, and continues only those whose arguments are whole", async () => {
    gateway.upstream.next(
      stream(
        [
          chunk({
            role: "assistant",
            content: null,
            tool_calls: [{ index: 0, id: "call_A", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } }],
          }),
          chunk({ tool_calls: [{ index: 1, id: "call_B", type: "function", function: { name: "get_weather", arguments: '{"ci' } }] }),
          chunk({ tool_calls: [{ index: 1, function: { arguments: 'ty":"Lima"}' } }] }),
        ],
        { hangAfter: 2 },
      ),
      reply(completion("Warm in Rome.")),
    );
    const events = await streamEvents(
      { input: "Weather in Rome and Lima?", tools },
      (event) => event.type === "response.function_call_arguments.delta" && event.delta === '{"ci',
    );
    const id = responseIdOf(events);
    await gateway.upstream.requests[0]!.aborted;

    const stored = await storedResponse(id);
    expect(stored.status).toBe("cancelled");
    expect(stored.output).toEqual([
      expect.objectContaining({ type: "function_call", call_id: ownId("call_A"), arguments: '{"city":"Rome"}', status: "completed" }),
      expect.objectContaining({ type: "function_call", call_id: ownId("call_B"), arguments: '{"ci', status: "incomplete" }),
    ]);

    await client.responses.create({
      model: "project-zero",
      previous_response_id: id,
      input: [{ type: "function_call_output", call_id: "call_A", output: "sunny" }],
      tools,
    });
    expect(gateway.upstream.requests[1]!.body.messages).toEqual([
      { role: "user", content: "Weather in Rome and Lima?" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_A", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } }] },
      { role: "tool", tool_call_id: "call_A", content: "sunny" },
    ]);
  });

  it("keeps nothing of a stream with store: false that its client stopped", async () => {
    gateway.upstream.next(storyBegun());
    const events = await streamEvents({ input: "Tell me a story", store: false }, (event) => event.type === "response.output_text.delta");
    await gateway.upstream.requests[0]!.aborted;
    await sleep(200);
    await expect(client.responses.retrieve(responseIdOf(events))).rejects.toMatchObject({ status: 404 });
  });

  it("keeps a stream a shutdown ended (its client told the service is shutting down) as a cancelled response", async () => {
    const upstream = await FakeUpstream.start();
    upstream.next(storyBegun());
    const env = {
      ZERO_UPSTREAMS: upstreamsEnv([upstream.url]),
      ZERO_SHUTDOWN_GRACE_MS: "300",
      ZERO_UPSTREAM_IDLE_TIMEOUT_MS: "10000",
      ZERO_FREE_POOL_DAILY_REQUESTS: "100000",
    };
    const stopping = await startTestApp({ env, keepDataDir: true });
    const { apiKey } = await createAccountWithKey(stopping, ["chat"]);
    const response = await fetch(`${stopping.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "project-zero", input: "Tell me a story", stream: true }),
    });
    const events: StreamEvent[] = [];
    let closing: Promise<void> | undefined;
    for await (const event of eventsOf(response)) {
      events.push(event);
      if (event.type === "response.output_text.delta") closing = stopping.close();
    }
    await closing;
    expect(events.at(-1)).toMatchObject({ type: "error", code: "unavailable" });

    const restarted = await startTestApp({ env, dataDir: stopping.dataDir, databaseUrl: stopping.databaseUrl });
    try {
      const stored = await openAiClient(restarted, apiKey).responses.retrieve(responseIdOf(events));
      expect(stored).toMatchObject({ status: "cancelled", error: null });
      expect(stored.output).toEqual([
        expect.objectContaining({ type: "message", status: "incomplete", content: [expect.objectContaining({ text: "Once upon" })] }),
      ]);
    } finally {
      await restarted.close();
      await upstream.close();
    }
  });

  it("lets an AI SDK chat go on after its user pressed Stop (useChat's stop() aborts the stream)", async () => {
    const openai = createOpenAI({ baseURL: `${gateway.app.url}/v1`, apiKey: gateway.apiKey, fetch: gateway.fetch });
    const chat: UIMessage[] = [{ id: "u1", role: "user", parts: [{ type: "text", text: "Tell me a story" }] }];
    gateway.upstream.next(storyBegun());
    const stopping = new AbortController();
    let responseId: string | undefined;
    const stopped = streamText({
      model: openai("project-zero"),
      messages: await convertToModelMessages(chat),
      abortSignal: stopping.signal,
      includeRawChunks: true,
      onChunk: ({ chunk: part }) => {
        if (part.type === "raw" && (part.rawValue as StreamEvent).type === "response.created") {
          responseId = ((part.rawValue as StreamEvent).response as { id: string }).id;
        }
      },
      maxRetries: 0,
    });
    let answer: UIMessage | undefined;
    for await (const message of readUIMessageStream({ stream: stopped.toUIMessageStream() })) {
      answer = message;
      if (message.parts.some((part) => part.type === "text" && part.text !== "")) stopping.abort();
    }
    expect(answer!.parts).toContainEqual(expect.objectContaining({ type: "text", text: "Once upon" }));
    chat.push(answer!, { id: "u2", role: "user", parts: [{ type: "text", text: "Something else, then" }] });
    await gateway.upstream.requests[0]!.aborted;
    await storedResponse(responseId!);

    gateway.upstream.next(stream(textChunks(["A haiku."])));
    const next = streamText({ model: openai("project-zero"), messages: await convertToModelMessages(chat), maxRetries: 0 });
    expect(await next.text).toBe("A haiku.");
    expect(gateway.upstream.requests[1]!.body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Tell me a story" }] },
      { role: "assistant", content: "Once upon" },
      { role: "user", content: [{ type: "text", text: "Something else, then" }] },
    ]);
  });
});

/** A Responses stream's events, as they arrive. */
async function* eventsOf(response: Response): AsyncGenerator<StreamEvent> {
  let buffered = "";
  for await (const text of response.body!.pipeThrough(new TextDecoderStream())) {
    buffered += text;
    for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
      const data = buffered
        .slice(0, end)
        .split("\n")
        .find((line) => line.startsWith("data: "))!;
      buffered = buffered.slice(end + 2);
      yield JSON.parse(data.slice("data: ".length)) as StreamEvent;
    }
  }
}
