/**
 * The chat router: the one path every chat completion takes, whichever door
 * it came in by (REST `/v1/chat/completions`, ChatService RPCs, or the stage
 * writers of other capabilities). It checks the alias, takes a unit of the
 * free pool and tries the upstreams in order.
 */
import { CHAT_ALIAS } from "../api/model.js";
import type { AccountDailyCap } from "./account-daily-cap.js";
import { ServiceError } from "../server/errors.js";
import { checkAlias } from "./chat-request.js";
import { ChunkRewriter, clientCompletion, newCompletionId } from "./completion-rewrite.js";
import type { FreePool } from "./free-pool.js";
import type { ToolTurnMemory } from "./tool-turn-memory.js";
import { ownCompletionCalls, type RecalledTurns, StreamTurns } from "./tool-turns.js";
import { SseParser, type SseEvent } from "./sse-parser.js";
import { AnswerDeadlineError, AnswerNotStartedError, AnswerTooLargeError } from "./upstream-body.js";
import { isTimeout, isUpstreamMisconfigured, type UpstreamAnswer, type UpstreamClient } from "./upstream-client.js";
import type { ChatCallOptions, ChatChunkJson, ChatCompleter, ChatCompletionJson, ChatRequest, GatewayRequest } from "./chat-types.js";

/** Dependencies of the router. */
export interface ChatRouterDeps {
  upstreams: UpstreamClient;
  pool: FreePool;
  /** `ZERO_CHAT_DAILY_REQUESTS_PER_ACCOUNT`, when set. */
  accountCap?: AccountDailyCap;
  /** Keeps what providers need back of their tool turns (a thinking model's reasoning); without it nothing is kept. */
  toolTurns?: ToolTurnMemory;
}

/**
 * The one router behind every door. Order of checks: the alias (no pool unit
 * is taken for a refused request), a unit of the free pool, then the
 * upstreams. A request that no upstream accepted gives its unit back.
 */
export class ChatRouter implements ChatCompleter {
  readonly #upstreams: UpstreamClient;
  readonly #pool: FreePool;
  readonly #accountCap: AccountDailyCap | undefined;
  readonly #toolTurns: ToolTurnMemory | undefined;

  constructor(deps: ChatRouterDeps) {
    this.#upstreams = deps.upstreams;
    this.#pool = deps.pool;
    this.#accountCap = deps.accountCap;
    this.#toolTurns = deps.toolTurns;
  }

  /** True when an upstream is configured. */
  get available(): boolean {
    return this.#upstreams.configured;
  }

  async complete(request: ChatRequest, options: ChatCallOptions): Promise<ChatCompletionJson> {
    const opened = await this.#open(request, false, options);
    try {
      const { completion, upstream } = await this.#whole(opened, request, false, options, async (answer, signal) => ({
        completion: await readCompletion(answer, signal),
        upstream: answer.upstream,
      }));
      // Before the client has the calls: its next request may follow at once.
      const turns = ownCompletionCalls(completion);
      if (turns.length > 0) await this.#toolTurns?.remember(options.accountId, upstream, turns);
      await opened.settle?.("spent");
      return clientCompletion(completion, newCompletionId());
    } catch (error) {
      await opened.settle?.(served(options.signal));
      throw error;
    }
  }

  /**
   * Reads a whole (non-streamed) answer with `read`. One that breaks off or
   * is not what was asked for (a 200 HTML page, a proxy's own JSON) has
   * reached nobody yet, so the next upstream in the order is asked, under the
   * same pool unit, as for a refusal before the first byte.
   */
  async #whole<T>(
    opened: { answer: UpstreamAnswer; recalled: RecalledTurns | undefined },
    request: GatewayRequest,
    embeddings: boolean,
    options: ChatCallOptions,
    read: (answer: UpstreamAnswer, signal: AbortSignal | undefined) => Promise<T>,
  ): Promise<T> {
    const { signal, requestLog } = options;
    let answer = opened.answer;
    for (;;) {
      let failed: unknown;
      try {
        return await read(answer, signal);
      } catch (error) {
        failed = error;
      } finally {
        answer.release();
      }
      if (signal?.aborted || !this.#upstreams.hasAfter(answer.upstream, embeddings)) throw failed;
      try {
        answer = await this.#upstreams.send(request, { stream: false, signal, embeddings, after: answer.upstream, requestLog, recalled: opened.recalled });
      } catch (next) {
        // Not every upstream refused its entry: this one answered.
        throw isUpstreamMisconfigured(next) ? failed : next;
      }
    }
  }

  /**
   * Opens a streamed completion. Resolves once an upstream has accepted the
   * request (so every refusal before that point is a thrown ServiceError);
   * the chunks are then relayed as the upstream sends them, those of one read
   * together in one step (a step of an async iterator costs a promise and a
   * resume per consumer). A failure after that is thrown by the iterator,
   * after the chunks that came before it; a stream that does not end with the
   * upstream's `[DONE]` is a failure, never a silent truncation.
   */
  async stream(request: ChatRequest, options: ChatCallOptions): Promise<AsyncGenerator<ChatChunkJson[], void, undefined>> {
    const { answer, settle } = await this.#open(request, true, options);
    const turns = this.#toolTurns && offersTools(request) ? new StreamTurns() : undefined;
    const relay = this.#relay(answer, newCompletionId(), options, settle, turns);
    // Into the relay's try: a consumer that stops before its first read (return() on a generator not yet
    // started runs none of its body) still ends the upstream exchange and settles the account's count.
    await relay.next();
    return relay;
  }

  async *#relay(
    answer: UpstreamAnswer,
    id: string,
    options: ChatCallOptions,
    settle: Settle | undefined,
    turns: StreamTurns | undefined,
  ): AsyncGenerator<ChatChunkJson[], void, undefined> {
    const signal = options.signal;
    let finished = false;
    let turnsKept = turns === undefined;
    let upstreamFailed = false;
    const rewriter = new ChunkRewriter(id, turns);
    const keepTurns = async () => {
      turnsKept = true;
      await this.#toolTurns!.remember(options.accountId, answer.upstream, turns!.turns());
    };
    try {
      // Taken by stream() itself, never relayed: from here on the finally below runs, whatever the consumer does.
      yield [];
      // After `[DONE]` the rest is let through unread, so the connection is kept.
      const parser = new SseParser();
      for (;;) {
        const pieces = await answer.body.read();
        const events = pieces === undefined ? parser.end() : parser.feed(pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces));
        const chunks: ChatChunkJson[] = [];
        let failure: ServiceError | undefined;
        for (const event of events) {
          if (event.data === "[DONE]") {
            if (!rewriter.answered) failure = new ServiceError("upstream_error", "the model's stream ended without an answer");
            else finished = true;
            break;
          }
          const chunk = chunkOf(event);
          if (chunk instanceof ServiceError) {
            failure = chunk;
            break;
          }
          const relayed = rewriter.rewrite(chunk);
          if (relayed) chunks.push(relayed);
        }
        // Before the client has the finished calls: its next request may follow at once.
        if (!turnsKept && (rewriter.finished || finished || pieces === undefined)) await keepTurns();
        if (chunks.length > 0) {
          answer.body.answering();
          yield chunks;
        }
        if (failure) throw failure;
        if (finished) return;
        if (pieces === undefined) {
          if (rewriter.finished) {
            finished = true;
            return;
          }
          break;
        }
      }
      throw new ServiceError("upstream_error", "the model's stream ended before it finished; the answer is incomplete");
    } catch (error) {
      if (signal?.aborted) throw error;
      // Silent after every choice finished: as whole as a stream that ends there (only a usage chunk could be missing).
      if (rewriter.finished && isTimeout(error)) return;
      const failed = error instanceof ServiceError ? error : failure(error, answer);
      answer.broke(failed);
      upstreamFailed = true;
      throw failed;
    } finally {
      // A stream cut short keeps what its calls need too: a stored response keeps the calls that are whole.
      if (!turnsKept) await keepTurns();
      if (finished) {
        answer.body.ignoreRest();
      } else {
        // The consumer stopped early (client gone) or the stream failed: end the upstream exchange now.
        answer.body.abort();
      }
      answer.release();
      // Before the failure reaches the client: its next request sees the count given back.
      await settle?.(upstreamFailed ? "refunded" : "spent");
    }
  }

  /**
   * Embeddings for the alias, from the upstreams that declare an embedding
   * model, with the same pool unit, failover and provider hiding as chat.
   * Vectors come back as floats, or as base64 when the client asked for it.
   */
  async embed(request: GatewayRequest, options: ChatCallOptions): Promise<Record<string, unknown>> {
    checkAlias(request);
    if (!this.#upstreams.servesEmbeddings) {
      throw new ServiceError("model_not_found", `the model \`${CHAT_ALIAS}\` serves no embeddings here: no upstream has an embedding model`, {
        status: 404,
        param: "model",
      });
    }
    const opened = await this.#open(request, false, options, true);
    const settle = opened.settle;
    const inputs = inputCount(request.input);
    let body: Embeddings;
    try {
      body = await this.#whole(opened, request, true, options, (answer, signal) => readEmbeddings(answer, signal, inputs));
      await settle?.("spent");
    } catch (error) {
      await settle?.(served(options.signal));
      throw error;
    }
    const base64 = request.encoding_format === "base64";
    const usage = body.usage;
    return {
      object: "list",
      data: body.vectors.map((vector, index) => ({
        object: "embedding",
        index,
        embedding: base64 ? Buffer.from(new Float32Array(vector).buffer).toString("base64") : vector,
      })),
      model: CHAT_ALIAS,
      usage: { prompt_tokens: Number(usage?.prompt_tokens ?? 0) || 0, total_tokens: Number(usage?.total_tokens ?? 0) || 0 },
    };
  }

  /**
   * Takes the account's count (when capped) and a unit of the pool, then
   * finds an upstream that accepts. The pool's unit is spent from then on,
   * whatever follows (the upstream was asked to produce). The account's count
   * is settled by the caller through `settle` once the answer is over:
   * spent when it reached the client (or the client left), given back when
   * the upstream's answer failed; until then the request counts as in flight.
   */
  async #open(
    request: GatewayRequest,
    stream: boolean,
    options: ChatCallOptions,
    embeddings = false,
  ): Promise<{ answer: UpstreamAnswer; settle: Settle | undefined; recalled: RecalledTurns | undefined }> {
    checkAlias(request);
    if (!this.#upstreams.configured) {
      throw new ServiceError("unavailable", "chat is not available here: no upstream is configured");
    }
    const capped = options.fromClient ? this.#accountCap : undefined;
    // No await at all without a cap: this path runs for every chat request.
    const countedDay = capped ? await capped.take(options.accountId) : undefined;
    try {
      if (!this.#pool.tryTake()) await this.#pool.take();
    } catch (error) {
      if (countedDay) await capped!.settle(options.accountId, countedDay, "refunded");
      throw error;
    }
    try {
      // Only a request that carries a call of ours reads anything.
      const recalling = embeddings ? undefined : this.#toolTurns?.recall(options.accountId, request);
      const recalled = recalling && (await recalling);
      const answer = await this.#upstreams.send(request, { stream, signal: options.signal, embeddings, requestLog: options.requestLog, recalled });
      this.#pool.settle("spent");
      if (!countedDay) return { answer, settle: undefined, recalled };
      let settled = false;
      const settle: Settle = async (how) => {
        if (settled) return;
        settled = true;
        await capped!.settle(options.accountId, countedDay, how).catch(() => {});
      };
      return { answer, settle, recalled };
    } catch (error) {
      this.#pool.settle("refunded");
      if (countedDay) await capped!.settle(options.accountId, countedDay, "refunded").catch(() => {});
      throw error;
    }
  }
}

/** True when the request offers the model tools (or the older functions): only then can an answer call one. */
function offersTools(request: GatewayRequest): boolean {
  return (Array.isArray(request.tools) && request.tools.length > 0) || (Array.isArray(request.functions) && request.functions.length > 0);
}

/** Settles a capped account's count once its answer is over. */
type Settle = (how: "spent" | "refunded") => Promise<void>;

/** How an answer that failed is counted: a client that left was still served what the upstream made; an upstream's failure served nothing. */
function served(signal: AbortSignal | undefined): "spent" | "refunded" {
  return signal?.aborted ? "spent" : "refunded";
}

/**
 * An upstream's whole answer as JSON; a body that breaks off, is not JSON,
 * is past the size cap or is not complete by its deadline is the upstream's failure.
 */
async function readJson(answer: UpstreamAnswer, signal: AbortSignal | undefined): Promise<unknown> {
  let text: string;
  try {
    text = await answer.body.text();
  } catch (error) {
    if (signal?.aborted) throw error;
    const failed = failure(error, answer);
    answer.broke(failed);
    throw failed;
  }
  try {
    return JSON.parse(text);
  } catch {
    throw unusable(answer, "the model returned an answer that is not JSON");
  }
}

/** An upstream's whole answer as a chat completion, or the upstream's failure. */
async function readCompletion(answer: UpstreamAnswer, signal: AbortSignal | undefined): Promise<ChatCompletionJson> {
  const json = await readJson(answer, signal);
  if (!isCompletion(json)) throw unusable(answer, "the model returned an answer that is not a chat completion");
  return json;
}

/** An upstream's embeddings, one vector per input in the order of the inputs. */
interface Embeddings {
  vectors: number[][];
  usage?: { prompt_tokens?: unknown; total_tokens?: unknown };
}

/**
 * How many vectors a request asks for: one for a text or a list of token ids,
 * else one per item (embeddings-rest.ts has checked the input's form).
 */
function inputCount(input: unknown): number {
  return Array.isArray(input) && typeof input[0] !== "number" ? input.length : 1;
}

/**
 * An upstream's whole answer as one vector per input, or the upstream's
 * failure. Each item's `index` ties its vector to its input (a provider may
 * list them in another order); a provider that gives no index at all lists
 * them in input order. Anything else (a vector missing, extra or given twice,
 * a number that is not one, vectors of different lengths) would hand the
 * caller a vector under another input's index, so it is not what was asked for.
 */
async function readEmbeddings(answer: UpstreamAnswer, signal: AbortSignal | undefined, inputs: number): Promise<Embeddings> {
  const json = await readJson(answer, signal);
  const vectors = vectorsInInputOrder((json as { data?: unknown } | null)?.data, inputs);
  if (vectors === undefined) throw unusable(answer, "the model returned an answer that is not one embedding per input");
  return { vectors, usage: (json as Embeddings).usage };
}

function vectorsInInputOrder(data: unknown, inputs: number): number[][] | undefined {
  if (!Array.isArray(data) || data.length !== inputs) return undefined;
  const items = data as ({ index?: unknown; embedding?: unknown } | null)[];
  const indexed = items.some((item) => item?.index !== undefined);
  const vectors: number[][] = new Array(inputs);
  let dimensions: number | undefined;
  for (let position = 0; position < inputs; position++) {
    const index = indexed ? items[position]?.index : position;
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= inputs || vectors[index] !== undefined) return undefined;
    const vector = floatsOf(items[position]?.embedding);
    if (vector === undefined || vector.length === 0) return undefined;
    dimensions ??= vector.length;
    if (vector.length !== dimensions) return undefined;
    vectors[index] = vector;
  }
  return vectors;
}

/** A vector as finite floats: given as floats, or as OpenAI's base64 (little-endian float32s) from a provider that ignored the ask for floats. */
function floatsOf(embedding: unknown): number[] | undefined {
  if (Array.isArray(embedding)) return embedding.every(Number.isFinite) ? embedding : undefined;
  if (typeof embedding !== "string") return undefined;
  const bytes = Buffer.from(embedding, "base64");
  if (bytes.length % 4 !== 0) return undefined;
  const floats: number[] = new Array(bytes.length >> 2);
  for (let i = 0; i < floats.length; i++) floats[i] = bytes.readFloatLE(i * 4);
  return floats.every(Number.isFinite) ? floats : undefined;
}

/** A completion with at least one choice, each a message whose content and finish reason have OpenAI's types. */
function isCompletion(value: unknown): value is ChatCompletionJson {
  if (typeof value !== "object" || value === null) return false;
  const { choices } = value as { choices?: unknown };
  return Array.isArray(choices) && choices.length > 0 && choices.every(isChoice);
}

function isChoice(choice: unknown): boolean {
  if (typeof choice !== "object" || choice === null) return false;
  const { message, finish_reason: finishReason } = choice as { message?: unknown; finish_reason?: unknown };
  if (typeof message !== "object" || message === null || Array.isArray(message)) return false;
  const { content } = message as { content?: unknown };
  return (content == null || typeof content === "string" || Array.isArray(content)) && (finishReason == null || typeof finishReason === "string");
}

/** A failure after the upstream accepted: a timeout is ours to name; anything else is the upstream's. */
function failure(error: unknown, answer: UpstreamAnswer): ServiceError {
  if (error instanceof AnswerTooLargeError) return new ServiceError("upstream_error", "the model's answer is larger than the service accepts");
  if (error instanceof AnswerNotStartedError) return new ServiceError("upstream_timeout", "the model did not begin its answer in time");
  if (error instanceof AnswerDeadlineError)
    return new ServiceError("upstream_timeout", "the model did not finish its answer in time; the answer is incomplete");
  if (isTimeout(error)) return new ServiceError("upstream_timeout", "the model stopped answering; the answer is incomplete");
  return new ServiceError("upstream_error", "the connection to the model broke; the answer is incomplete", {
    cause: { upstream: answer.upstream, error },
  });
}

/** A 2xx answer that is not what was asked for: the upstream's failure, counted and logged like one that broke off. */
function unusable(answer: UpstreamAnswer, message: string): ServiceError {
  const failed = new ServiceError("upstream_error", message);
  answer.broke(failed);
  return failed;
}

/** An upstream's event as a chunk to relay, or why it is not one. */
function chunkOf(event: SseEvent): ChatChunkJson | ServiceError {
  let chunk: unknown;
  try {
    chunk = JSON.parse(event.data);
  } catch {
    return new ServiceError("upstream_error", "the model sent a malformed chunk; the answer is incomplete");
  }
  if (typeof chunk !== "object" || chunk === null || Array.isArray(chunk) || "error" in chunk || event.event === "error") {
    return new ServiceError("upstream_error", "the model failed mid-answer; the answer is incomplete");
  }
  return chunk as ChatChunkJson;
}
