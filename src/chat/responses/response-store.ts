import { CompiledQuery, type Kysely, sql } from "kysely";
import type { Database } from "../../db/schema.js";
import { StatementBatcher, type StatementObserver } from "../../db/statement-batcher.js";
import { type InputItem, type InputItemList, type InputItemsQuery, storedInputItems } from "./responses-input-items.js";
import type { ChatMessage } from "./responses-request.js";

/** How long a stored response can be read or continued. */
export const RESPONSE_TTL_MS = 30 * 24 * 3600 * 1000;

interface NewResponse {
  id: string;
  accountId: string;
  response: string;
  previousId: string | null;
  turnMessages: string;
  inputItems: string | null;
}

/** What a stored response adds to its conversation: its input and answer, after the conversation of the response it continues. */
export interface ResponseTurn {
  previousId: string | undefined;
  messages: readonly ChatMessage[];
}

/**
 * Stored Responses API answers, per account: another account's id reads
 * exactly like a missing one. A response is stored before it is answered
 * (a client told it is stored can always continue it); concurrent saves are
 * group-committed, one INSERT for all that arrive while others run, which is
 * what keeps `store: true` (the default) near the gateway's chat throughput.
 *
 * Each response keeps its own turn and a link to the one it continues, so a
 * conversation is stored once, not once per turn. A response deleted or
 * expired while a live one continues it stays, hidden, for as long as that
 * one needs its turn: every stored response can be continued for its 30 days.
 */
export class ResponseStore {
  readonly #db: Kysely<Database>;
  readonly #saves: StatementBatcher<NewResponse, undefined>;

  constructor(db: Kysely<Database>, observeSaves?: StatementObserver) {
    this.#db = db;
    // One statement at a time: saves arriving meanwhile wait for it and go together in the next, so under load
    // Postgres's time goes to rows rather than to statements (in the chat bench, 1 in flight beat 4 by about a fifth).
    this.#saves = new StatementBatcher(
      async (rows) => {
        await db.executeQuery(
          CompiledQuery.raw(
            insertText(rows.length),
            rows.flatMap((row) => [row.id, row.accountId, row.response, row.previousId, row.turnMessages, row.inputItems]),
          ),
        );
        return rows.map(() => undefined);
      },
      { maxInFlight: 1, maxBatch: MAX_BATCH, observe: observeSaves },
    );
  }

  /** Stores a response: its object as sent, its turn of the conversation, and the request's own input items (for listing). */
  save(accountId: string, id: string, response: string, turn: ResponseTurn, inputItems?: readonly InputItem[]): Promise<undefined> {
    return this.#saves.submit({
      id,
      accountId,
      response,
      previousId: turn.previousId ?? null,
      turnMessages: JSON.stringify(turn.messages),
      inputItems: inputItems === undefined ? null : JSON.stringify(inputItems),
    });
  }

  /** The response object as first sent, or undefined. */
  async response(accountId: string, id: string): Promise<string | undefined> {
    const row = await this.#live(accountId, id).select("response").executeTakeFirst();
    return row?.response;
  }

  /**
   * The conversation a continuation of `id` starts from: the turns of its
   * chain, oldest first (a row stored before turns were kept holds the whole
   * conversation up to it). Undefined when `id` is not a live response of the
   * account, or its chain is broken (a response it continues was deleted
   * while it was being answered): never a conversation with turns missing.
   * "too large" when its turns come to more than `maxBytes`, counted by
   * Postgres from the rows' lengths, so nothing of them is read then.
   */
  async messages(accountId: string, id: string, maxBytes: number): Promise<ChatMessage[] | "too large" | undefined> {
    const { rows } = await sql<{ whole: boolean; continues: boolean; messages: string | null; turn_messages: string | null; fits: boolean }>`
      WITH RECURSIVE chain AS (
        SELECT id, previous_id, messages IS NOT NULL AS whole, 0 AS depth FROM chat_responses
        WHERE id = ${id} AND account_id = ${accountId} AND expires_at > now()
        UNION ALL
        SELECT r.id, r.previous_id, r.messages IS NOT NULL, chain.depth + 1 FROM chat_responses r JOIN chain ON r.id = chain.previous_id
        WHERE NOT chain.whole AND r.account_id = ${accountId}
      ), fits AS (
        SELECT coalesce(sum(coalesce(octet_length(r.messages), 0) + coalesce(octet_length(r.turn_messages), 0)), 0) <= ${maxBytes} AS fits
        FROM chat_responses r JOIN chain USING (id)
      )
      SELECT chain.whole, chain.previous_id IS NOT NULL AS continues, fits,
        CASE WHEN fits THEN r.messages END AS messages, CASE WHEN fits THEN r.turn_messages END AS turn_messages
      FROM chain JOIN chat_responses r USING (id) CROSS JOIN fits ORDER BY chain.depth DESC`.execute(this.#db);
    const first = rows[0];
    if (first === undefined || (!first.whole && first.continues)) return undefined;
    if (!first.fits) return "too large";
    const conversation: ChatMessage[] = [];
    for (const row of rows) {
      if (row.messages !== null) conversation.push(...(JSON.parse(row.messages) as ChatMessage[]));
      if (row.turn_messages !== null) conversation.push(...(JSON.parse(row.turn_messages) as ChatMessage[]));
    }
    return conversation;
  }

  /**
   * A page of the input items of the request that made `id` (none if stored
   * before they were kept), or undefined when there is no such response.
   * Postgres slices the stored list and sends only the page: read whole, a
   * 14 MB input took ~85 ms of this process's event loop per page, which
   * stalled every other request. Postgres still parses all of it (about as
   * long), but in its own process, beside the service's; on PGlite, which
   * runs inside the service, that gains nothing. `after`/`before` naming no
   * item answers which one.
   */
  async inputItemsPage(accountId: string, id: string, query: InputItemsQuery): Promise<InputItemList | { unknown: "after" | "before" } | undefined> {
    // k orders the items as asked (input order for asc, reversed for desc); ids are unique (inputItemsOf).
    const fromEnd = query.before !== undefined && query.after === undefined;
    const { rows } = await sql<{ after_k: number | null; before_k: number | null; page: string }>`
      WITH r AS (
        SELECT input_items FROM chat_responses WHERE id = ${id} AND account_id = ${accountId} AND expires_at > now()
      ), items AS (
        SELECT e.item, CASE WHEN ${query.order === "asc"} THEN e.n ELSE -e.n END AS k
        FROM r, json_array_elements(coalesce(r.input_items, '[]')::json) WITH ORDINALITY AS e(item, n)
      ), bounds AS (
        SELECT (SELECT k FROM items WHERE item->>'id' = ${query.after ?? null}) AS after_k,
               (SELECT k FROM items WHERE item->>'id' = ${query.before ?? null}) AS before_k
      )
      SELECT b.after_k, b.before_k, (
        SELECT coalesce(json_agg(p.item ORDER BY p.k), '[]')::text FROM (
          SELECT item, k FROM items
          WHERE (b.after_k IS NULL OR k > b.after_k) AND (b.before_k IS NULL OR k < b.before_k)
          ORDER BY CASE WHEN ${fromEnd} THEN -k ELSE k END
          LIMIT ${query.limit + 1}
        ) AS p
      ) AS page
      FROM bounds b
      WHERE EXISTS (SELECT 1 FROM r)`.execute(this.#db);
    const row = rows[0];
    if (row === undefined) return undefined;
    if (query.after !== undefined && row.after_k === null) return { unknown: "after" };
    if (query.before !== undefined && row.before_k === null) return { unknown: "before" };
    const window = JSON.parse(row.page) as InputItem[];
    // One more than the page was read, to tell whether there are more: the farthest from where the page starts.
    const data = window.length <= query.limit ? window : fromEnd ? window.slice(1) : window.slice(0, query.limit);
    return { object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: window.length > data.length };
  }

  /**
   * The output and input items of the account's live responses among
   * `responseIds`, by item id: what an
   * `item_reference` names. One read for all of them, which reads nothing
   * when the rows come to more than `maxBytes` (counted by Postgres without
   * reading them): "too large".
   */
  async items(accountId: string, responseIds: readonly string[], maxBytes: number): Promise<Map<string, Record<string, unknown>> | "too large"> {
    const { rows } = await sql<{ response: string | null; input_items: string | null; fits: boolean }>`
      WITH named AS (
        SELECT id FROM chat_responses
        WHERE id = any(${[...responseIds]}::text[]) AND account_id = ${accountId} AND expires_at > now()
      ), fits AS (
        SELECT coalesce(sum(octet_length(r.response) + coalesce(octet_length(r.input_items), 0)), 0) <= ${maxBytes} AS fits
        FROM chat_responses r JOIN named USING (id)
      )
      SELECT CASE WHEN fits THEN r.response END AS response, CASE WHEN fits THEN r.input_items END AS input_items, fits
      FROM chat_responses r JOIN named USING (id) CROSS JOIN fits`.execute(this.#db);
    if (rows.some((row) => !row.fits)) return "too large";
    const items = new Map<string, Record<string, unknown>>();
    for (const row of rows) {
      for (const item of storedInputItems(row.input_items)) items.set(item.id, item);
      const { output } = JSON.parse(row.response!) as { output?: unknown };
      if (!Array.isArray(output)) continue;
      for (const item of output as Record<string, unknown>[]) if (typeof item.id === "string") items.set(item.id, item);
    }
    return items;
  }

  /**
   * True when a response was deleted. The copy of its object kept for its
   * Idempotency-Key's replays (chat_idempotency_keys, for up to a day) goes in
   * the same statement, replaced by what a replay needs to be refused (its id,
   * stored): a delete leaves none of the response's text behind. That copy is
   * found by how it begins, `{"id":"<id>",` (the response object's first
   * field), so another answer that merely mentions the id (in its metadata,
   * its text) keeps its replay.
   */
  async delete(accountId: string, id: string): Promise<boolean> {
    // A response that another continues keeps its turn, hidden (expired, its object and items gone), until the sweep finds no live response needs it.
    const result = await sql<{ deleted: number }>`
      WITH target AS (
        SELECT id, EXISTS (SELECT 1 FROM chat_responses c WHERE c.previous_id = ${id}) AS continued
        FROM chat_responses WHERE id = ${id} AND account_id = ${accountId} AND expires_at > now()
      ), removed AS (
        DELETE FROM chat_responses WHERE id IN (SELECT id FROM target WHERE NOT continued) RETURNING id
      ), hidden AS (
        UPDATE chat_responses SET expires_at = now(), response = '{}', input_items = NULL WHERE id IN (SELECT id FROM target WHERE continued) RETURNING id
      ), deleted AS (
        SELECT id FROM removed UNION ALL SELECT id FROM hidden
      ), forgotten AS (
        UPDATE chat_idempotency_keys SET response = ${JSON.stringify({ id, object: "response", store: true })}
        WHERE account_id = ${accountId} AND state = 'done' AND starts_with(response, ${`{"id":${JSON.stringify(id)},`}) AND EXISTS (SELECT 1 FROM deleted)
      )
      SELECT count(*)::int AS deleted FROM deleted`.execute(this.#db);
    return (result.rows[0]?.deleted ?? 0) > 0;
  }

  /** Deletes expired (and deleted) responses that no live response continues, however far back; run now and then so the table stays small. */
  async sweep(): Promise<number> {
    const result = await sql`
      WITH RECURSIVE needed (id) AS (
        SELECT previous_id FROM chat_responses WHERE expires_at > now() AND previous_id IS NOT NULL
        UNION
        SELECT r.previous_id FROM chat_responses r JOIN needed ON r.id = needed.id WHERE r.previous_id IS NOT NULL
      )
      DELETE FROM chat_responses WHERE expires_at <= now() AND NOT EXISTS (SELECT 1 FROM needed WHERE needed.id = chat_responses.id)`.execute(this.#db);
    return Number(result.numAffectedRows ?? 0);
  }

  #live(accountId: string, id: string) {
    return this.#db.selectFrom("chat_responses").where("id", "=", id).where("account_id", "=", accountId).where("expires_at", ">", sql<Date>`now()`);
  }
}

const MAX_BATCH = 64;
const insertTexts: string[] = [];

/**
 * The INSERT of `rows` responses: a VALUES row per response, each value its
 * own parameter, so the JSON texts go to Postgres as they are. (Arrays for
 * `unnest` would keep one statement text, but pg writes every element into
 * an array literal, escaping its quotes: in the bench that was a tenth of the
 * gateway's CPU.) One text per batch size, each prepared once per connection.
 */
function insertText(rows: number): string {
  let text = insertTexts[rows];
  if (text === undefined) {
    const values = Array.from(
      { length: rows },
      (_, i) =>
        `($${6 * i + 1}, $${6 * i + 2}, $${6 * i + 3}, $${6 * i + 4}, $${6 * i + 5}, $${6 * i + 6}, now() + interval '${RESPONSE_TTL_MS} milliseconds')`,
    );
    text = `INSERT INTO chat_responses (id, account_id, response, previous_id, turn_messages, input_items, expires_at) VALUES ${values.join(", ")}`;
    insertTexts[rows] = text;
  }
  return text;
}
