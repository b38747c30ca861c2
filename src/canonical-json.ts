/**
 * The JSON text of `value` with every object's keys in sorted order, so equal
 * values give equal text whatever order their keys came in: a stage's output
 * read back from Postgres `jsonb` has its keys in jsonb's order, not the
 * writer's, and a client's retry may build its body anew. For keys and
 * digests, not for what is shown.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    typeof item === "object" && item !== null && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}
