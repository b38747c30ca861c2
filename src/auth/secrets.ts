import { hash, randomBytes, randomInt, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Random base62 text, unbiased. */
export function randomBase62(length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

/** Opaque ids with a type prefix: `acc_…`, `key_…`, `ses_…`, `pln_…`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(20)}`;
}

/** An API key secret: `zk_` and 40 base62 characters (~238 bits). */
export function newApiKeySecret(): string {
  return `zk_${randomBase62(40)}`;
}

export const API_KEY_PATTERN = /^zk_[0-9A-Za-z]{32,}$/;

/** A session cookie token (256 bits). */
export function newSessionToken(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * Key secrets and session tokens carry 200+ random bits, so one fast SHA-256
 * is enough to store them; a slow KDF is for low-entropy passwords only.
 */
export function hashToken(token: string): string {
  // The one-shot form: a third of createHash().update().digest()'s time.
  return hash("sha256", token);
}

const SCRYPT = { N: 1 << 15, r: 8, p: 1, keyLength: 32 };
// N·r·128 = 32 MiB per hash: memory-hard, ~60 ms on this class of machine.
const SCRYPT_MAX_MEM = 64 * 1024 * 1024;

function scryptAsync(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password, salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key))));
}

/** `scrypt$N$r$p$salt$hash`, parameters stored so they can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const { N, r, p, keyLength } = SCRYPT;
  const key = await scryptAsync(password, salt, keyLength, { N, r, p, maxmem: SCRYPT_MAX_MEM });
  return ["scrypt", N, r, p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, hash] = stored.split("$");
  if (kind !== "scrypt" || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64url");
  const actual = await scryptAsync(password, Buffer.from(salt, "base64url"), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT_MAX_MEM,
  });
  return timingSafeEqual(actual, expected);
}

/** A hash to compare against when the email is unknown, so timing does not tell. */
let decoyHash: Promise<string> | undefined;
export function decoyPasswordHash(): Promise<string> {
  decoyHash ??= hashPassword(randomBase62(24));
  return decoyHash;
}
