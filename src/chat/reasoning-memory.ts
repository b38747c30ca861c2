import { sql, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { Logger } from "../observability/logger.js";
import type { ChatChunkJson, ChatCompletionJson, GatewayRequest } from "./chat-types.js";
import { isObject } from "./openai-fields.js";
import { MAX_WHOLE_BODY_BYTES } from "./upstream-body.js";

/** As long as a stored response can be continued: a conversation with a tool turn may go on that long. */
const REASONING_TTL_MS = 30 * 24 * 3600 * 1000;

/** A remembered turn's reasoning, by the id of the turn's first tool call; only `upstream` is sent it back. */
export type RecalledReasoning = ReadonlyMap<string, { upstream: string; reasoning: string }>;

/** One assistant turn that called tools, and the reasoning the model wrote before the calls. */
interface ThoughtTurn {
  firstCallId: string;
  reasoning: string;
}

/**
 * What a thinking model wrote before calling tools, kept so a tool loop can
 * go on. DeepSeek's and Kimi's thinking modes send `reasoning_content`
 * beside each message and refuse (400) any request whose history has a
 * turn with tool calls but without that turn's reasoning. It is not an
 * OpenAI field, so the gateway shows it to no client (see openai-fields.ts),
 * and OpenAI's clients would drop it anyway; so the gateway keeps it here,
 * per account, and puts it back into each later request that carries the
 * turn without it, for the upstream that wrote it only (another provider
 * may refuse a field it does not know). Turns are told by their first tool
 * call's id, which the client sends back as it got it. Reasoning a client
 * sends itself is left as sent.
 */
export class ReasoningMemory {
  readonly #db: Kysely<Database>;
  readonly #logger: Logger;

  constructor(db: Kysely<Database>, logger: Logger) {
    this.#db = db;
    this.#logger = logger;
  }

  /**
   * The remembered reasoning of the turns in `request` that called tools
   * and carry none. Undefined at once, with no read, when it carries no such
   * turn (as almost every request does).
   */
  recall(accountId: string, request: GatewayRequest): Promise<RecalledReasoning | undefined> | undefined {
    const ids = turnsWithoutReasoning(request.messages);
    return ids === undefined ? undefined : this.#read(accountId, ids);
  }

  async #read(accountId: string, ids: string[]): Promise<RecalledReasoning | undefined> {
    try {
      const rows = await this.#db
        .selectFrom("chat_reasoning")
        .select(["tool_call_id", "upstream", "reasoning"])
        .where("account_id", "=", accountId)
        .where("tool_call_id", "=", sql<string>`any(${ids}::text[])`)
        .where("expires_at", ">", sql<Date>`now()`)
        .execute();
      return rows.length === 0 ? undefined : new Map(rows.map((row) => [row.tool_call_id, { upstream: row.upstream, reasoning: row.reasoning }]));
    } catch (error) {
      // Without it the request goes as the client sent it, as it would without the gateway.
      this.#logger.warn({ err: error }, "reading remembered reasoning failed");
      return undefined;
    }
  }

  /** Keeps the reasoning of `turns`, written by `upstream`; a failure is logged, and the answer still goes out. */
  async remember(accountId: string, upstream: string, turns: readonly ThoughtTurn[]): Promise<void> {
    if (turns.length === 0) return;
    try {
      const expiresAt = new Date(Date.now() + REASONING_TTL_MS);
      await this.#db
        .insertInto("chat_reasoning")
        .values(turns.map((turn) => ({ account_id: accountId, tool_call_id: turn.firstCallId, upstream, reasoning: turn.reasoning, expires_at: expiresAt })))
        .onConflict((conflict) =>
          conflict.columns(["account_id", "tool_call_id"]).doUpdateSet((eb) => ({
            upstream: eb.ref("excluded.upstream"),
            reasoning: eb.ref("excluded.reasoning"),
            expires_at: eb.ref("excluded.expires_at"),
          })),
        )
        .execute();
    } catch (error) {
      this.#logger.warn({ err: error }, "remembering a model's reasoning failed");
    }
  }

  /** Deletes expired reasoning; run now and then so the table stays small. */
  async sweep(): Promise<number> {
    const result = await this.#db.deleteFrom("chat_reasoning").where("expires_at", "<=", sql<Date>`now()`).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

/** The first call ids of the assistant turns in `messages` that called tools and carry no reasoning, or undefined. */
function turnsWithoutReasoning(messages: unknown): string[] | undefined {
  if (!Array.isArray(messages)) return undefined;
  let ids: string[] | undefined;
  for (const message of messages) {
    if (!isObject(message) || message.role !== "assistant" || typeof message.reasoning_content === "string") continue;
    const id = firstCallId(message.tool_calls);
    if (id === undefined) continue;
    ids ??= [];
    ids.push(id);
  }
  return ids;
}

function firstCallId(calls: unknown): string | undefined {
  if (!Array.isArray(calls) || calls.length === 0) return undefined;
  const first: unknown = calls[0];
  return isObject(first) && typeof first.id === "string" && first.id !== "" ? first.id : undefined;
}

/**
 * `messages` for `upstream`: each turn it wrote reasoning for, with that
 * reasoning as its `reasoning_content`; the same array when there is none to
 * add.
 */
export function withRecalledReasoning(messages: unknown, upstream: string, recalled: RecalledReasoning | undefined): unknown {
  if (recalled === undefined || !Array.isArray(messages)) return messages;
  let changed = false;
  const sent = messages.map((message: unknown) => {
    if (!isObject(message) || message.role !== "assistant" || typeof message.reasoning_content === "string") return message;
    const id = firstCallId(message.tool_calls);
    const found = id === undefined ? undefined : recalled.get(id);
    if (found?.upstream !== upstream) return message;
    changed = true;
    return { ...message, reasoning_content: found.reasoning };
  });
  return changed ? sent : messages;
}

/** The turns of a whole completion that called tools after writing reasoning. */
export function thoughtTurnsOf(completion: ChatCompletionJson): ThoughtTurn[] {
  const turns: ThoughtTurn[] = [];
  const choices = completion.choices;
  if (!Array.isArray(choices)) return turns;
  for (const choice of choices) {
    const message: unknown = isObject(choice) ? choice.message : undefined;
    if (!isObject(message)) continue;
    const { reasoning_content: reasoning, tool_calls: calls } = message;
    const firstCallIdOfTurn = firstCallId(calls);
    if (typeof reasoning === "string" && reasoning !== "" && firstCallIdOfTurn !== undefined) turns.push({ firstCallId: firstCallIdOfTurn, reasoning });
  }
  return turns;
}

/**
 * The same for a stream, chunk by chunk: per choice, the reasoning pieces
 * and the id of the first tool call. `ended` once a choice has finished.
 */
export class ThoughtTrail {
  readonly #choices = new Map<unknown, { reasoning: string; firstCallId: string | undefined; overflowed: boolean }>();
  ended = false;

  observe(chunk: ChatChunkJson): void {
    const choices = chunk.choices;
    if (!Array.isArray(choices)) return;
    for (const choice of choices) {
      if (!isObject(choice)) continue;
      if (choice.finish_reason != null) this.ended = true;
      const delta = choice.delta;
      if (!isObject(delta)) continue;
      const piece = delta.reasoning_content;
      const callId = delta.tool_calls === undefined ? undefined : firstCallId(delta.tool_calls);
      if ((typeof piece !== "string" || piece === "") && callId === undefined) continue;
      let trail = this.#choices.get(choice.index);
      if (trail === undefined) {
        trail = { reasoning: "", firstCallId: undefined, overflowed: false };
        this.#choices.set(choice.index, trail);
      }
      if (typeof piece === "string" && !trail.overflowed) {
        // Reasoning longer than a whole answer may be is not kept (nor held here while the stream goes on).
        trail.overflowed = trail.reasoning.length + piece.length > MAX_WHOLE_BODY_BYTES;
        trail.reasoning = trail.overflowed ? "" : trail.reasoning + piece;
      }
      trail.firstCallId ??= callId;
    }
  }

  /** The finished turns that called tools after writing reasoning. */
  turns(): ThoughtTurn[] {
    const turns: ThoughtTurn[] = [];
    for (const { reasoning, firstCallId: id } of this.#choices.values()) if (reasoning !== "" && id !== undefined) turns.push({ firstCallId: id, reasoning });
    return turns;
  }
}
