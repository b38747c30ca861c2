/**
 * Tool turns across the gateway: the ids of tool calls, and what a provider
 * writes on a turn that it needs back in later requests.
 *
 * Ids. A provider's call ids are not always unique: Kimi numbers them from 0
 * in each answer (`functions.get_weather:0`), Gemini sends none. So each
 * call a client sees gets an id of its own, the provider's with a random
 * suffix (or a new one where the provider gave none), and each request
 * going upstream has the suffix taken off again, in the calls and in the
 * tool results that answer them: the provider sees its own ids, whose form
 * some models rely on, and no client sees two calls under one id.
 *
 * Echoes. DeepSeek's and Kimi's thinking modes write `reasoning_content`
 * beside a message, OpenRouter `reasoning_details`, Gemini 3 an
 * `extra_content` (its thought signature) on each call; each refuses (400) a
 * later request that carries the turn without them. None is an OpenAI
 * field, so no client is shown them, and OpenAI clients would drop them
 * anyway: the gateway keeps them (ToolTurnMemory) and puts them back, into
 * requests for the upstream that wrote them only.
 */
import { isObject } from "./openai-fields.js";
import { MAX_WHOLE_BODY_BYTES } from "./upstream-body.js";
import { uniqueHex } from "./unique-hex.js";

/** Marks the suffix that makes a provider's call id ours. */
const SUFFIX = /__pz[0-9a-f]{12}$/;
/** Ids we made for calls that came without one: sent upstream as they are. */
const MADE = /^call_[0-9a-f]{32}$/;

/** Most call ids one request looks up: the latest, as a conversation longer than this is one no provider takes whole. */
const MAX_LOOKUPS = 10_000;

/** The fields of an assistant message, and of a tool call, that providers need back. */
const MESSAGE_ECHOES = ["reasoning_content", "reasoning_details"] as const;
const CALL_ECHOES = ["extra_content"] as const;

/** A call's id as clients see it: the provider's with a random suffix, or one of ours where it gave none. */
export function ownCallId(theirs: unknown): string {
  return typeof theirs === "string" && theirs !== "" ? `${theirs}__pz${uniqueHex().slice(-12)}` : `call_${uniqueHex()}`;
}

/** The id a call had from its provider (the same text for an id that is not ours). */
export function providerCallId(ours: string): string {
  return ours.replace(SUFFIX, "");
}

/** True for an id this gateway may have given: only such ids are looked up. */
function mayBeOurs(id: string): boolean {
  return SUFFIX.test(id) || MADE.test(id);
}

/** One assistant turn that called tools, with what its provider needs back. */
export interface ToolTurn {
  /** Our ids of its calls, in order. */
  callIds: string[];
  /** The message's echoed fields (`reasoning_content`, `reasoning_details`); empty when none. */
  message: Record<string, unknown>;
  /** Each call's echoed fields (`extra_content`), by our id. */
  calls: Record<string, Record<string, unknown>>;
}

/** A remembered turn's echoes, by our call id, and the upstreams known to want reasoning on every tool turn. */
export interface RecalledTurns {
  byCall: ReadonlyMap<string, { upstream: string; turnId: string; message: Record<string, unknown>; call: Record<string, unknown> | undefined }>;
  thinking: ReadonlySet<string>;
}

/** True when a turn has anything its provider needs back. */
export function hasEchoes(turn: ToolTurn): boolean {
  return Object.keys(turn.message).length > 0 || Object.keys(turn.calls).length > 0;
}

/**
 * Gives the calls of a whole completion our ids, in place, and returns its
 * turns: to run before the completion is cut to OpenAI's fields. A choice
 * with calls that says it stopped (Gemini's `stop`) says `tool_calls`, as
 * OpenAI's do and loops check.
 */
export function ownCompletionCalls(completion: Record<string, unknown>): ToolTurn[] {
  const turns: ToolTurn[] = [];
  if (!Array.isArray(completion.choices)) return turns;
  for (const choice of completion.choices) {
    const message: unknown = isObject(choice) ? choice.message : undefined;
    if (!hasToolCalls(message)) continue;
    const turn: ToolTurn = { callIds: [], message: echoesOf(message, MESSAGE_ECHOES), calls: {} };
    for (const call of message.tool_calls) {
      if (!isObject(call)) continue;
      const id = ownCallId(call.id);
      call.id = id;
      turn.callIds.push(id);
      const echoes = callEchoes(call);
      if (echoes !== undefined) turn.calls[id] = echoes;
    }
    if (choice.finish_reason === "stop") choice.finish_reason = "tool_calls";
    turns.push(turn);
  }
  return turns;
}

/** A message with tool calls (an answer's, whatever role it gives). */
function hasToolCalls(message: unknown): message is Record<string, unknown> & { tool_calls: unknown[] } {
  return isObject(message) && Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
}

/** An assistant turn with tool calls, as a request carries it back. */
function isAssistantToolTurn(message: unknown): message is Record<string, unknown> & { tool_calls: unknown[] } {
  return hasToolCalls(message) && message.role === "assistant";
}

function echoesOf(value: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const echoes: Record<string, unknown> = {};
  for (const key of keys) {
    const field = value[key];
    if (field !== undefined && field !== null && field !== "") echoes[key] = field;
  }
  return echoes;
}

/**
 * The same for a stream, delta by delta, per choice: `message` is fed each
 * raw delta (before it is cut to OpenAI's fields), `call` each call as it
 * gets our id, with the raw call's echoed fields.
 */
export class StreamTurns {
  /** Characters of reasoning held, over every choice. */
  #held = 0;
  readonly #choices = new Map<
    number,
    { ids: (string | undefined)[]; calls: Record<number, Record<string, unknown>>; reasoning: string; details: unknown[]; overflowed: boolean }
  >();

  #of(choice: number) {
    let entry = this.#choices.get(choice);
    if (entry === undefined) {
      entry = { ids: [], calls: {}, reasoning: "", details: [], overflowed: false };
      this.#choices.set(choice, entry);
    }
    return entry;
  }

  message(choice: number, delta: Record<string, unknown>): void {
    const piece = delta.reasoning_content;
    const details = delta.reasoning_details;
    if ((typeof piece !== "string" || piece === "") && !Array.isArray(details)) return;
    const entry = this.#of(choice);
    if (entry.overflowed) return;
    // What a stream's turns hold here is bounded as a whole answer is: past it, a turn's reasoning is not kept.
    this.#held += (typeof piece === "string" ? piece.length : 0) + (Array.isArray(details) ? JSON.stringify(details).length : 0);
    if (this.#held > MAX_WHOLE_BODY_BYTES) {
      entry.overflowed = true;
      entry.reasoning = "";
      entry.details = [];
      return;
    }
    if (typeof piece === "string") entry.reasoning += piece;
    if (Array.isArray(details)) for (const detail of details as unknown[]) entry.details.push(detail);
  }

  /** A delta of call number `index` (ours), with our id once it has one, and the provider's fields it carried. */
  call(choice: number, index: number, ourId: string | undefined, echoes: Record<string, unknown> | undefined): void {
    const entry = this.#of(choice);
    if (ourId !== undefined) entry.ids[index] = ourId;
    else if (entry.ids.length <= index) entry.ids.length = index + 1;
    if (echoes !== undefined) entry.calls[index] = { ...entry.calls[index], ...echoes };
  }

  /** The turns that called tools, each with the calls that have an id. */
  turns(): ToolTurn[] {
    const turns: ToolTurn[] = [];
    for (const { ids, calls, reasoning, details, overflowed } of this.#choices.values()) {
      const turn: ToolTurn = { callIds: [], message: {}, calls: {} };
      ids.forEach((id, index) => {
        if (id === undefined) return;
        turn.callIds.push(id);
        if (calls[index] !== undefined) turn.calls[id] = calls[index];
      });
      if (turn.callIds.length === 0) continue;
      if (!overflowed && reasoning !== "") turn.message.reasoning_content = reasoning;
      if (!overflowed && details.length > 0) turn.message.reasoning_details = details;
      turns.push(turn);
    }
    return turns;
  }
}

/** The echoed fields of a raw streamed call, if it carries any. */
export function callEchoes(call: Record<string, unknown>): Record<string, unknown> | undefined {
  const echoes = echoesOf(call, CALL_ECHOES);
  return Object.keys(echoes).length > 0 ? echoes : undefined;
}

/**
 * A request's messages as `upstream` is sent them: every call id and tool
 * result's id the provider's own again; and each turn `upstream` wrote with
 * what it needs back (`recalled`), where the client did not send it itself.
 * A turn sent as several messages (one per call) carries its reasoning on
 * the first and an empty one on the rest; a turn another upstream wrote
 * gets an empty reasoning when `upstream` is known to refuse a tool turn
 * without one (`thinking`, or seen writing reasoning). The same array when
 * nothing changes.
 */
export function outgoingMessages(messages: unknown, upstream: string, recalled: RecalledTurns | undefined, thinking = false): unknown {
  if (!Array.isArray(messages)) return messages;
  let changed = false;
  const given = new Set<string>();
  const wantsReasoning = thinking || recalled?.thinking.has(upstream) === true;
  const sent = messages.map((message: unknown) => {
    if (!isObject(message)) return message;
    if (message.role === "tool") {
      if (typeof message.tool_call_id !== "string") return message;
      const id = providerCallId(message.tool_call_id);
      if (id === message.tool_call_id) return message;
      changed = true;
      return { ...message, tool_call_id: id };
    }
    if (!isAssistantToolTurn(message)) return message;
    let turn: { turnId: string; message: Record<string, unknown> } | undefined;
    let callsChanged = false;
    const calls = message.tool_calls.map((call: unknown) => {
      if (!isObject(call) || typeof call.id !== "string") return call;
      const kept = recalled?.byCall.get(call.id);
      const mine = kept?.upstream === upstream ? kept : undefined;
      turn ??= mine;
      const id = providerCallId(call.id);
      if (id === call.id && mine?.call === undefined) return call;
      callsChanged = true;
      return { ...mine?.call, ...call, id };
    });
    const added: Record<string, unknown> = {};
    if (turn !== undefined) {
      const first = !given.has(turn.turnId);
      given.add(turn.turnId);
      for (const [key, value] of Object.entries(turn.message)) {
        if (message[key] !== undefined) continue;
        if (first) added[key] = value;
        else if (key === "reasoning_content") added[key] = "";
      }
    } else if (wantsReasoning && typeof message.reasoning_content !== "string") {
      added.reasoning_content = "";
    }
    if (!callsChanged && Object.keys(added).length === 0) return message;
    changed = true;
    return { ...message, ...added, tool_calls: calls };
  });
  return changed ? sent : messages;
}

/** True when `messages` has a tool turn without a reasoning: what a thinking model refuses. */
export function hasTurnWithoutReasoning(messages: unknown): boolean {
  return Array.isArray(messages) && messages.some((message) => isAssistantToolTurn(message) && typeof message.reasoning_content !== "string");
}

/** Our call ids in a request's assistant turns, for the lookup; undefined when there are none. */
export function ourCallIds(messages: unknown): string[] | undefined {
  if (!Array.isArray(messages)) return undefined;
  let ids: string[] | undefined;
  for (const message of messages) {
    if (!isAssistantToolTurn(message)) continue;
    for (const call of message.tool_calls) {
      if (!isObject(call) || typeof call.id !== "string" || !mayBeOurs(call.id)) continue;
      ids ??= [];
      ids.push(call.id);
    }
  }
  return ids !== undefined && ids.length > MAX_LOOKUPS ? ids.slice(-MAX_LOOKUPS) : ids;
}
