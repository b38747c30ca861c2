import {
  answer,
  completion,
  FakeUpstream,
  fail,
  hang,
  reply,
  sleep,
  stream,
  textChunks,
  type Behavior,
  type Exchange,
  type UpstreamRequest,
} from "../chat/support/fake-upstream.js";
import { schemaNameOf, writerModel } from "../outcomes/support/model-answers.js";

/** What the upstream does to the requests that arrive while the mode holds. */
export type UpstreamMode = "normal" | "hang" | "storm" | "drop";

/** Markers a chat message carries to ask for a slow answer, whatever the mode (client-disconnect checks). */
export const SLOW_STREAM = "soak:slow-stream";
export const SLOW_ANSWER = "soak:slow-answer";

/** The plain chat answer, so the soak can check that what arrives is what was sent. */
export const CHAT_ANSWER = "pong from the soak upstream";
export const STREAM_PIECES = ["Hello", " from", " the", " soak"];

/** A goal tag the soak puts in each goal; every writer prompt repeats the goal, so requests map to plans. */
export const planTagPattern = /\[soak-(\d+)\]/;

/**
 * The fake provider of the soak: one real HTTP server (FakeUpstream) whose
 * answers follow a switchable mode. It counts what it served: an exchange
 * whose response head went out with a 2xx is an answer the gateway took a
 * pool unit for and kept, which is what the pool audit compares with the
 * database. Writer requests are counted per plan tag and schema, so a stage
 * run twice shows up as a second set of requests.
 */
export class SoakUpstream {
  mode: UpstreamMode = "normal";
  /** Exchanges answered with a 2xx head. */
  served = 0;
  /** Exchanges refused (5xx), hung or dropped before a head. */
  notServed = 0;
  /** 2xx writer answers by plan tag, then schema name. */
  readonly writerServed = new Map<number, Map<string, number>>();
  /** Every slow request (disconnect checks), by the marker's id. */
  readonly slow = new Map<string, UpstreamRequest>();

  private constructor(
    readonly fake: FakeUpstream,
    readonly writerDelayMs: [number, number],
  ) {
    fake.otherwise((exchange) => this.#answer(exchange));
  }

  static async start(writerDelayMs: [number, number] = [100, 400]): Promise<SoakUpstream> {
    return new SoakUpstream(await FakeUpstream.start(), writerDelayMs);
  }

  get url(): string {
    return this.fake.url;
  }

  /** Requests seen so far (all of them, including ones still open). */
  get seen(): number {
    return this.fake.requests.length;
  }

  close(): Promise<void> {
    return this.fake.close();
  }

  async #answer(exchange: Exchange): Promise<void> {
    const { res, body } = exchange;
    const schema = schemaNameOf(body);
    const text = JSON.stringify(body.messages ?? "");
    res.once("close", () => {
      const ok = res.headersSent && res.statusCode >= 200 && res.statusCode < 300;
      if (!ok) {
        this.notServed++;
        return;
      }
      this.served++;
      const tag = planTagPattern.exec(text)?.[1];
      if (schema && tag !== undefined) {
        const perPlan = this.writerServed.get(Number(tag)) ?? new Map<string, number>();
        perPlan.set(schema, (perPlan.get(schema) ?? 0) + 1);
        this.writerServed.set(Number(tag), perPlan);
      }
    });

    const slowId = new RegExp(`(${SLOW_STREAM}|${SLOW_ANSWER}) ([a-z0-9-]+)`).exec(text);
    if (slowId) {
      this.slow.set(slowId[2]!, exchange.record);
      // Slow, but each piece well inside the gateway's idle timeout; the client hangs up first.
      if (slowId[1] === SLOW_STREAM) return stream(textChunks(Array.from({ length: 40 }, (_, i) => `piece ${i} `)), { delayMs: 150 })(exchange);
      await sleep(1500);
      if (!res.destroyed) return reply(completion(CHAT_ANSWER))(exchange);
      return;
    }

    const behavior: Behavior = this.#behavior(schema !== "", body.stream === true);
    return behavior(exchange);
  }

  #behavior(writer: boolean, streaming: boolean): Behavior {
    switch (this.mode) {
      case "hang":
        return hang();
      case "storm":
        return fail(500, "upstream overloaded at SecretCo");
      case "drop":
        // The head and part of the answer go out, then the connection dies.
        return streaming ? stream(textChunks(STREAM_PIECES), { dropAfter: 2 }) : dropMidBody();
      case "normal":
        if (writer) return delayed(writerModel, this.writerDelayMs);
        return streaming ? stream(textChunks(STREAM_PIECES), { delayMs: 2 }) : answer(CHAT_ANSWER);
    }
  }
}

/** A writer's answer after a pause, so stages take long enough for a SIGKILL to land mid-stage. */
function delayed(behavior: Behavior, [min, max]: [number, number]): Behavior {
  return async (exchange) => {
    await sleep(min + Math.random() * (max - min));
    if (!exchange.res.destroyed) await behavior(exchange);
  };
}

/** A 200 head and half a JSON body, then the socket is destroyed. */
function dropMidBody(): Behavior {
  return async ({ res }) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.write('{"id":"upstream-cmpl-SECRET","object":"chat.completion","choices":[{"index":0,"message":{"role":"assi');
    await sleep(30);
    res.socket?.destroy();
  };
}
