/** SQL states and socket errors meaning the database is away, not that a query is wrong. */
const CONNECTION_ERROR_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "57P01", "57P03", "08006", "08001", "08003"]);

/**
 * SQL states of a database out of room, which passes once an operator (or
 * time) makes some: insufficient resources, a full disk, out of memory, too
 * many connections (as `instances × 11` past `max_connections` gives).
 */
const OUT_OF_ROOM_CODES = new Set(["53000", "53100", "53200", "53300"]);

/**
 * True when the database is away (refused, reset, shutting down) or out of
 * room (disk, memory, connections): a while, not a query bug. Requests get
 * 503 and the engine keeps a finished stage's result until it can write it.
 */
export function isDatabaseDown(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (CONNECTION_ERROR_CODES.has(code) || OUT_OF_ROOM_CODES.has(code))) return true;
  const message = (error as { message?: unknown }).message;
  return (
    typeof message === "string" && /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message)
  );
}

/**
 * SQLSTATEs of text Postgres cannot store, however often it is sent: a NUL in text (22021, invalid byte sequence) or
 * `\u0000` in jsonb (22P05, untranslatable character). Half a surrogate pair in jsonb is 22P02, invalid text
 * representation, from the JSON parser (jsonfuncs.c; JSON.stringify writes nothing else it refuses); 22P02 from
 * anywhere else is a malformed number or id, a bug of ours, as are the rest of class 22 (a number out of range).
 */
const UNSTORABLE_TEXT_CODES = new Set(["22021", "22P05"]);

/** True for text Postgres cannot store (UNSTORABLE_TEXT_CODES): a NUL character, or half a surrogate pair in jsonb. */
export function isUnstorableText(error: unknown): boolean {
  const { code, file } = (error ?? {}) as { code?: unknown; file?: unknown };
  return (typeof code === "string" && UNSTORABLE_TEXT_CODES.has(code)) || (code === "22P02" && file === "jsonfuncs.c");
}

/** True when Postgres rolled a statement back to break a deadlock (40P01) or a serialization conflict (40001): nothing was written, and trying again may succeed. */
export function isConflict(error: unknown): boolean {
  const sqlState = (error as { code?: unknown } | null)?.code;
  return sqlState === "40P01" || sqlState === "40001";
}
