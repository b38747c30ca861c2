import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "../api/limits.js";
import { invalidRequest } from "../server/errors.js";

/** RFC 5321's limit on a forward path; also keeps every index on e-mails far below Postgres's btree row limit. */
export const EMAIL_MAX_LENGTH = 254;
/**
 * No password field is read past this, at sign-in or anywhere else: scrypt's
 * cost does not depend on the length, but reading and hashing a megabyte a
 * guess is still waste.
 */
export const PASSWORD_INPUT_CAP = 1024;

/**
 * The e-mail as typed (trimmed, lower case), or an `invalid_request`. It is
 * stored composed (`normalizeEmail`) and looked up under `emailSpellings`.
 * The length is capped before anything else looks at the text, and the
 * checks are single passes over a bounded length: these arrive from anyone,
 * before any sign-in.
 */
export function parseEmail(raw: string): string {
  // Leading and trailing white space is forgiven, so allow for it before the cap; the cap itself is on the stored form.
  if (raw.length > EMAIL_MAX_LENGTH * 4) throw badEmail();
  const email = typedEmail(raw);
  if (normalizeEmail(email).length > EMAIL_MAX_LENGTH || INVISIBLE_OR_SPACE.test(email) || !hasEmailShape(email)) throw badEmail();
  return email;
}

/**
 * The form this version stores an address in: trimmed, lower case, and
 * composed (NFC), so `é` typed as one character or as `e` and an accent is
 * one address.
 */
export function normalizeEmail(email: string): string {
  return typedEmail(email).normalize("NFC");
}

/**
 * The spellings an account for `email` may be stored under, the one to prefer
 * first: as typed, composed, decomposed (NFD). Versions before NFC stored an
 * address as typed, and one still does beside this version during a rolling
 * deploy or after a rollback; the migration that composed stored addresses
 * left a decomposed one alone where its composed form was another account's.
 * So the owner of an account stored decomposed reaches it by typing their
 * spelling, and where two accounts hold one address in two spellings, each
 * owner reaches their own.
 */
export function emailSpellings(email: string): string[] {
  const typed = typedEmail(email);
  return [...new Set([typed, typed.normalize("NFC"), typed.normalize("NFD")])];
}

/** How versions before NFC stored an address. */
function typedEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * Control and format characters (zero-width spaces and joiners, bidi
 * controls, soft hyphens) and white space: none belongs in an address, and
 * the invisible ones make lookalikes of another.
 */
const INVISIBLE_OR_SPACE = /[\p{Cc}\p{Cf}\p{White_Space}]/u;

/**
 * The password if it is within bounds, else an `invalid_request`: never more
 * than PASSWORD_INPUT_CAP characters, and with `policy` (a new password) 8 to
 * 256. Sign-in checks only the cap: a password outside the policy is simply
 * a wrong one there.
 */
export function checkPasswordLength(password: string, options: { field?: string; policy?: boolean } = {}): string {
  const { field = "password", policy = true } = options;
  // Every code point is one or two UTF-16 units, so this bound is safe to test before counting them.
  if (password.length > PASSWORD_INPUT_CAP * 2 || [...password].length > PASSWORD_INPUT_CAP) {
    throw invalidRequest(`the password must be at most ${policy ? PASSWORD_MAX_LENGTH : PASSWORD_INPUT_CAP} characters`, field);
  }
  const length = [...password].length;
  if (policy && (length < PASSWORD_MIN_LENGTH || length > PASSWORD_MAX_LENGTH)) {
    throw invalidRequest(`the password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`, field);
  }
  return password;
}

/**
 * `local@domain.tld`: exactly one `@` with text before it, and a dot in the
 * domain with text on both sides. Deliberately loose (the real test of an
 * address is mail arriving), and linear.
 */
function hasEmailShape(email: string): boolean {
  let at = -1;
  let lastDot = -1;
  for (let i = 0; i < email.length; i++) {
    const c = email.charCodeAt(i);
    if (c === 0x40 /* @ */) {
      if (at !== -1) return false;
      at = i;
    } else if (c === 0x2e /* . */ && at !== -1) {
      lastDot = i;
    }
  }
  return at > 0 && lastDot > at + 1 && lastDot < email.length - 1;
}

function badEmail() {
  return invalidRequest(`enter a valid email address (at most ${EMAIL_MAX_LENGTH} characters)`, "email");
}
