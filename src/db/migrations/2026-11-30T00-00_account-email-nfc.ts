import { sql, type Kysely } from "kysely";

// Frozen once landed: a later change is a new migration.
// E-mails are now looked up composed (NFC): an address stored decomposed is composed, so its owner can sign in
// again. Where the composed form is already an account (the duplicate this closes), that account keeps it and
// the decomposed one is left as it was; of several that compose alike, the oldest is composed.
// Postgres normalizes only on a UTF8 server; on any other encoding no address can be decomposed Unicode.
export async function up(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ encoding: string }>`select current_setting('server_encoding') as encoding`.execute(db);
  if (rows[0]?.encoding !== "UTF8") return;
  await sql`
    update accounts set email = normalize(email, NFC)
     where id in (
             select distinct on (normalize(email, NFC)) id from accounts
              where email is not nfc normalized
              order by normalize(email, NFC), created_at, id)
       and not exists (select 1 from accounts composed where composed.email = normalize(accounts.email, NFC))
  `.execute(db);
}

// Composing loses nothing a sign-in needs: the addresses stay composed.
export async function down(): Promise<void> {}
