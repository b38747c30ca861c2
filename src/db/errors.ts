/** SQL states and socket errors meaning the database is away, not that a query is wrong. */
const CONNECTION_ERROR_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "57P01", "57P03", "08006", "08001", "08003"]);

/** True when the database is away (refused, reset, shutting down), as opposed to a query bug. */
export function isDatabaseDown(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && CONNECTION_ERROR_CODES.has(code)) return true;
  const message = (error as { message?: unknown }).message;
  return (
    typeof message === "string" && /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message)
  );
}

/** True for text Postgres cannot store: a NUL character (22P05) or an invalid byte sequence (22021). */
export function isUnstorableText(error: unknown): boolean {
  const sqlState = (error as { code?: unknown } | null)?.code;
  return sqlState === "22021" || sqlState === "22P05";
}

/**
 * True when Postgres refused a statement's values (SQLSTATE class 22, data exception: a NUL in text or jsonb,
 * half a surrogate pair in jsonb, a number out of range): the same values fail again however often they are sent.
 */
export function isDataException(error: unknown): boolean {
  const sqlState = (error as { code?: unknown } | null)?.code;
  return typeof sqlState === "string" && sqlState.startsWith("22");
}

/** True when Postgres rolled a statement back to break a deadlock (40P01) or a serialization conflict (40001): nothing was written, and trying again may succeed. */
export function isConflict(error: unknown): boolean {
  const sqlState = (error as { code?: unknown } | null)?.code;
  return sqlState === "40P01" || sqlState === "40001";
}
