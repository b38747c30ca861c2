import { sql } from "kysely";
import type OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { OPENAI_BODY_MAX_BYTES } from "../../src/api/limits.js";
import { ResponseStore } from "../../src/chat/responses/response-store.js";
import { completion, type FakeUpstream, reply } from "./support/fake-upstream.js";
import { openAiClient, useSdkGateway } from "./support/gateway.js";

/** A conversation as `conversationSent` shows it: user and assistant in turn, the user first. */
function alternating(...texts: string[]): string[] {
  return texts.map((text, i) => `${i % 2 === 0 ? "user" : "assistant"}: ${text}`);
}

/** What the upstream was sent as the conversation, as `role: text` lines (instructions excluded). */
function conversationSent(upstream: FakeUpstream): string[] {
  const { messages } = upstream.requests.at(-1)!.body as { messages: { role: string; content: string }[] };
  return messages.map((message) => `${message.role}: ${message.content}`);
}

// Found by a review of retention: each stored response kept the whole conversation so far, so a conversation of n turns was stored n times over.
describe("stored Responses conversations", () => {
  const gateway = useSdkGateway();
  let client: OpenAI;
  beforeAll(() => {
    client = openAiClient(gateway.app, gateway.apiKey);
  });
  const db = () => gateway.app.store.db;

  /** The bytes the account's stored conversations take. */
  async function storedBytes(): Promise<number> {
    const { rows } = await sql<{ bytes: number }>`
      SELECT coalesce(sum(coalesce(octet_length(messages), 0) + coalesce(octet_length(turn_messages), 0)), 0)::int AS bytes
      FROM chat_responses WHERE account_id = ${gateway.accountId}`.execute(db());
    return rows[0]!.bytes;
  }

  /** Asks `input`, continuing `previous`; the upstream answers `answer`. */
  async function turn(input: string, answer: string, previous?: string): Promise<string> {
    gateway.upstream.next(reply(completion(answer)));
    const response = await client.responses.create({ model: "project-zero", input, ...(previous ? { previous_response_id: previous } : {}) });
    return response.id;
  }

  it("stores a long conversation once, not once per turn, and continues it whole", async () => {
    const long = `Remember this: ${"lorem ipsum ".repeat(2_000)}`;
    let id = await turn(long, "Noted.");
    const afterFirst = await storedBytes();
    for (let i = 1; i <= 10; i++) id = await turn(`question ${i}`, `answer ${i}`, id);
    // Eleven turns of one long text and ten short ones: about the long text once (each copy of it is 24 KB).
    expect(await storedBytes()).toBeLessThan(afterFirst + 3_000);

    await turn("and now?", "done", id);
    expect(conversationSent(gateway.upstream)).toEqual(
      alternating(long, "Noted.", ...Array.from({ length: 10 }, (_, i) => [`question ${i + 1}`, `answer ${i + 1}`]).flat(), "and now?"),
    );
  });

  it("a deleted response is gone for its client, while a response that continues it still carries its turn", async () => {
    const first = await turn("my name is Ada", "Hello Ada.");
    const middle = await turn("I live in Lyon", "Lyon is lovely.", first);
    const last = await turn("I keep bees", "How sweet.", middle);

    await client.responses.delete(middle);
    await expect(client.responses.retrieve(middle)).rejects.toMatchObject({ status: 404 });
    await expect(turn("where do I live?", "?", middle)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.inputItems.list(middle)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.delete(middle)).rejects.toMatchObject({ status: 404 });

    await turn("what do you know about me?", "Everything.", last);
    expect(conversationSent(gateway.upstream)).toEqual(
      alternating("my name is Ada", "Hello Ada.", "I live in Lyon", "Lyon is lovely.", "I keep bees", "How sweet.", "what do you know about me?"),
    );

    // With nothing left that continues it, the hidden turn goes at the next sweep, and deleting the rest leaves no text behind.
    const { rows: continuing } = await sql<{ id: string }>`SELECT id FROM chat_responses WHERE previous_id = ${last}`.execute(db());
    for (const { id } of [...continuing, { id: last }, { id: first }]) await client.responses.delete(id);
    await new ResponseStore(db()).sweep();
    const { rows } = await sql<{ id: string }>`SELECT id FROM chat_responses WHERE id = any(${[first, middle, last]}::text[])`.execute(db());
    expect(rows).toEqual([]);
  });

  it("the sweep keeps the expired turns a live response continues, and removes a chain once none of it is live", async () => {
    const a = await turn("one", "1");
    const b = await turn("two", "2", a);
    const c = await turn("three", "3", b);
    const age = (ids: string[]) => sql`UPDATE chat_responses SET expires_at = now() - interval '1 day' WHERE id = any(${ids}::text[])`.execute(db());
    const left = async () =>
      (await sql<{ id: string }>`SELECT id FROM chat_responses WHERE id = any(${[a, b, c]}::text[]) ORDER BY created_at`.execute(db())).rows.map(
        (row) => row.id,
      );
    const store = new ResponseStore(db());

    await age([a, b]);
    await store.sweep();
    expect(await left()).toEqual([a, b, c]);
    // Expired, a response is gone for its client on every route, though a live one still carries its turn.
    await expect(client.responses.retrieve(a)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.inputItems.list(a)).rejects.toMatchObject({ status: 404 });
    await expect(turn("go on", "?", a)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.delete(a)).rejects.toMatchObject({ status: 404 });
    await turn("four", "4", c);
    expect(conversationSent(gateway.upstream)).toEqual(alternating("one", "1", "two", "2", "three", "3", "four"));

    const { rows: continuing } = await sql<{ id: string }>`SELECT id FROM chat_responses WHERE previous_id = ${c}`.execute(db());
    await age([c, ...continuing.map((row) => row.id)]);
    await store.sweep();
    expect(await left()).toEqual([]);
  });

  it("continues a response stored by an earlier version, which kept the whole conversation in its row", async () => {
    const id = `resp_${"0".repeat(48)}`;
    await db()
      .insertInto("chat_responses")
      .values({
        id,
        account_id: gateway.accountId,
        response: JSON.stringify({ id, object: "response" }),
        messages: JSON.stringify([
          { role: "user", content: "first" },
          { role: "assistant", content: "one" },
          { role: "user", content: "second" },
          { role: "assistant", content: "two" },
        ]),
        expires_at: new Date(Date.now() + 3_600_000),
      })
      .execute();
    const next = await turn("third", "three", id);
    await turn("fourth", "?", next);
    expect(conversationSent(gateway.upstream)).toEqual(alternating("first", "one", "second", "two", "third", "three", "fourth"));
  });

  // Found by a security review: a 100-byte continuation of a chain built turn by turn made the gateway read, parse and send it all.
  it("refuses to continue a conversation whose stored turns come to more than a body, before reading them", async () => {
    const half = "h".repeat(OPENAI_BODY_MAX_BYTES / 2);
    const first = await turn(half, "one");
    const second = await turn(half, "two", first);
    const sent = gateway.upstream.requests.length;
    await expect(client.responses.create({ model: "project-zero", input: "and?", previous_response_id: second })).rejects.toMatchObject({
      status: 413,
      error: { type: "payload_too_large", param: "previous_response_id" },
    });
    expect(gateway.upstream.requests).toHaveLength(sent);
    // Its first half still continues.
    expect(await turn("and?", "three", first)).toMatch(/^resp_/);
  });
});
