import { sql, type Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { Logger } from "../observability/logger.js";
import type { GatewayRequest } from "./chat-types.js";
import { hasEchoes, ourCallIds, type RecalledTurns, type ToolTurn } from "./tool-turns.js";

const ROWS_PER_INSERT = 1000;

/** As long as a stored response can be continued: a conversation with a tool turn may go on that long. */
const TURN_TTL_MS = 30 * 24 * 3600 * 1000;

/**
 * What providers need back of the tool turns they wrote (see tool-turns.ts),
 * per account, by our id of each call: written before the answer reaches
 * the client, read for a request that carries a call of ours, swept after
 * 30 days. A failure either way is logged and the request goes on as the
 * client sent it, as it would without the gateway.
 */
export class ToolTurnMemory {
  readonly #db: Kysely<Database>;
  readonly #logger: Logger;
  /** Upstreams seen writing reasoning beside a tool turn (on this instance; the rows say it for the others). */
  readonly #thinking = new Set<string>();

  constructor(db: Kysely<Database>, logger: Logger) {
    this.#db = db;
    this.#logger = logger;
  }

  /** What is kept for the calls of ours in `request`; undefined at once, with no read, when it carries none (as almost every request does). */
  recall(accountId: string, request: GatewayRequest): Promise<RecalledTurns> | undefined {
    const ids = ourCallIds(request.messages);
    return ids === undefined ? undefined : this.#read(accountId, ids);
  }

  async #read(accountId: string, ids: string[]): Promise<RecalledTurns> {
    const thinking = new Set(this.#thinking);
    try {
      // Each call's row, and its turn's message fields (which only the turn's first call's row holds) once per turn,
      // however many of its calls are asked for: a turn's reasoning is read and parsed once.
      const { rows } = await sql<{ tool_call_id: string; turn_id: string; upstream: string; call_fields: string | null; message_fields: string | null }>`
        SELECT asked.tool_call_id, asked.turn_id, asked.upstream, asked.call_fields,
          CASE WHEN row_number() OVER (PARTITION BY asked.turn_id) = 1 THEN turn.message_fields END AS message_fields
        FROM chat_tool_turns asked
        LEFT JOIN chat_tool_turns turn ON turn.account_id = asked.account_id AND turn.tool_call_id = asked.turn_id
        WHERE asked.account_id = ${accountId} AND asked.tool_call_id = any(${ids}::text[]) AND asked.expires_at > now()`.execute(this.#db);
      const messages = new Map<string, Record<string, unknown>>();
      for (const row of rows) {
        if (row.message_fields === null) continue;
        const message = JSON.parse(row.message_fields) as Record<string, unknown>;
        messages.set(row.turn_id, message);
        if (message.reasoning_content !== undefined) thinking.add(row.upstream);
      }
      const byCall: RecalledTurns["byCall"] = new Map(
        rows.map((row) => {
          const call = row.call_fields === null ? undefined : (JSON.parse(row.call_fields) as Record<string, unknown>);
          return [row.tool_call_id, { upstream: row.upstream, turnId: row.turn_id, message: messages.get(row.turn_id) ?? {}, call }];
        }),
      );
      return { byCall, thinking };
    } catch (error) {
      this.#logger.warn({ err: error }, "reading kept tool turns failed");
      return { byCall: new Map(), thinking };
    }
  }

  /** Keeps what `upstream` needs back of `turns` (those with nothing to send back are skipped). */
  async remember(accountId: string, upstream: string, turns: readonly ToolTurn[]): Promise<void> {
    const kept = turns.filter(hasEchoes);
    if (kept.length === 0) return;
    if (kept.some((turn) => turn.message.reasoning_content !== undefined)) this.#thinking.add(upstream);
    const expiresAt = new Date(Date.now() + TURN_TTL_MS);
    // The turn's message fields (its reasoning) once, on its first call's row: a turn of many calls is not its reasoning many times.
    const rows = kept.flatMap((turn) =>
      turn.callIds.map((id, index) => ({
        account_id: accountId,
        tool_call_id: id,
        turn_id: turn.callIds[0]!,
        upstream,
        message_fields: index === 0 ? JSON.stringify(turn.message) : "{}",
        call_fields: turn.calls[id] === undefined ? null : JSON.stringify(turn.calls[id]),
        expires_at: expiresAt,
      })),
    );
    try {
      await this.#db.transaction().execute(async (trx) => {
        // In statements of ROWS_PER_INSERT: Postgres takes at most 65,535 parameters in one.
        for (let from = 0; from < rows.length; from += ROWS_PER_INSERT) {
          // Ids are ours and unique: a conflict is a retry of the same write.
          await trx
            .insertInto("chat_tool_turns")
            .values(rows.slice(from, from + ROWS_PER_INSERT))
            .onConflict((conflict) => conflict.columns(["account_id", "tool_call_id"]).doNothing())
            .execute();
        }
      });
    } catch (error) {
      this.#logger.warn({ err: error }, "keeping a tool turn failed");
    }
  }

  /** Deletes expired turns; run now and then so the table stays small. */
  async sweep(): Promise<number> {
    const result = await this.#db.deleteFrom("chat_tool_turns").where("expires_at", "<=", sql<Date>`now()`).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
