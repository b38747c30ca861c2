import type OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { type Behavior, chunk, completion, reply, stream } from "./support/fake-upstream.js";
import { openAiClient, useSdkGateway } from "./support/gateway.js";

// A refused answer continued in both of the Responses API's ways, by `previous_response_id` and by
// sending its output items back as input: the upstream sees the same assistant turn, the refusal's words.
describe("/v1/responses: a refusal continued", () => {
  const gateway = useSdkGateway();
  let client: OpenAI;
  beforeAll(() => {
    client = openAiClient(gateway.app, gateway.apiKey);
  });

  const refusedPlainly = (message: Record<string, unknown>): Behavior =>
    reply(completion(null, { choices: [{ index: 0, message: { role: "assistant", content: null, ...message }, logprobs: null, finish_reason: "stop" }] }));

  /**
   * Asks `question`, answered by `answer`, then continues the answer by its id and by its output: the conversation
   * the upstream was sent, the same both ways.
   */
  async function continued(question: string, answer: Behavior, streamed: boolean): Promise<unknown> {
    gateway.upstream.reset();
    gateway.upstream.next(answer, reply(completion("Because it is not allowed.")), reply(completion("Because it is not allowed.")));
    const first = streamed
      ? await client.responses.stream({ model: "project-zero", input: question }).finalResponse()
      : await client.responses.create({ model: "project-zero", input: question });
    await client.responses.create({ model: "project-zero", previous_response_id: first.id, input: "Why?" });
    await client.responses.create({
      model: "project-zero",
      input: [{ role: "user", content: question }, ...(first.output as OpenAI.Responses.ResponseOutputMessage[]), { role: "user", content: "Why?" }],
    });
    const [byId, byReplay] = [gateway.upstream.requests[1]!.body.messages, gateway.upstream.requests[2]!.body.messages];
    expect(byReplay).toEqual(byId);
    return byId;
  }

  const conversation = (question: string, assistant: string) => [
    { role: "user", content: question },
    { role: "assistant", content: assistant },
    { role: "user", content: "Why?" },
  ];

  it("continues a plain (non-streamed) refusal with its words as the assistant's content, as replaying its output does", async () => {
    const sent = await continued("Something forbidden", refusedPlainly({ refusal: "I can't help with that." }), false);
    expect(sent).toEqual(conversation("Something forbidden", "I can't help with that."));
  });

  it("continues a streamed refusal the same way", async () => {
    const refusing = stream([
      chunk({ role: "assistant", content: null, refusal: "" }),
      chunk({ refusal: "I can't " }),
      chunk({ refusal: "help with that." }),
      chunk({}, "stop"),
    ]);
    expect(await continued("Something forbidden", refusing, true)).toEqual(conversation("Something forbidden", "I can't help with that."));
  });

  it("continues text and a refusal as one content, their words in the order they came (a refusal streamed first stays first)", async () => {
    const plain = await continued("Two things", refusedPlainly({ content: "Partly. ", refusal: "No more." }), false);
    expect(plain).toEqual(conversation("Two things", "Partly. No more."));
    const refusalFirst = stream([chunk({ role: "assistant", content: null, refusal: "Not that. " }), chunk({ content: "This instead." }), chunk({}, "stop")]);
    expect(await continued("Two things", refusalFirst, true)).toEqual(conversation("Two things", "Not that. This instead."));
  });
});
