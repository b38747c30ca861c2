import type { ColumnType, Generated, Selectable } from "kysely";

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

/** A person who signs in to the Console. Emails are stored lower-cased. */
export interface AccountTable {
  id: string;
  email: string;
  /** `scrypt$N$r$p$salt$hash`, never the password. */
  password_hash: string;
  created_at: CreatedAt;
}

/** A Console session. Only the SHA-256 of the cookie token is stored. */
export interface SessionTable {
  id: string;
  account_id: string;
  token_hash: string;
  created_at: CreatedAt;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
  /** Kept to the minute; a session unused for SESSION_IDLE_MS has ended. */
  last_used_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** An API key. Only the SHA-256 of the secret is stored; `prefix` lets a person recognise it. */
export interface ApiKeyTable {
  id: string;
  account_id: string;
  name: string;
  prefix: string;
  secret_hash: string;
  scopes: string[];
  created_at: CreatedAt;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
}

/** Sign-in and sign-up attempts per bucket (pair, e-mail, address), in fixed windows, shared by every instance. */
export interface SignInAttemptTable {
  bucket: string;
  window_start: Timestamp;
  attempts: Generated<number>;
}

/** Addresses an account signed in from: the sign-in limits never lock the owner out at one of these. */
export interface SignInKnownAddressTable {
  account_id: string;
  address: string;
  last_success_at: Timestamp;
}

export type Account = Selectable<AccountTable>;
export type ApiKeyRow = Selectable<ApiKeyTable>;

export interface AuthTables {
  accounts: AccountTable;
  sessions: SessionTable;
  api_keys: ApiKeyTable;
  sign_in_attempts: SignInAttemptTable;
  sign_in_known_addresses: SignInKnownAddressTable;
}
