/** The version every answer about this build reports. */
export const SERVICE_VERSION = "0.1.0";
/** A goal's length, in characters, after trimming. */
export const GOAL_MIN_LENGTH = 8;
export const GOAL_MAX_LENGTH = 2000;
/** Feedback on a draft at the gate, in characters after trimming. */
export const FEEDBACK_MIN_LENGTH = 1;
export const FEEDBACK_MAX_LENGTH = 2000;
/** How many executions a list answers with, newest first. */
export const LIST_LIMIT = 10;
/** The largest request body, in bytes, that `/api` routes and RPCs read. */
export const API_BODY_MAX_BYTES = 1 << 20;
/** The largest request body, in bytes, that `/v1` routes read: image content parts travel inline as base64. */
export const OPENAI_BODY_MAX_BYTES = 16 << 20;
/** The longest API key name, in characters (code points). */
export const KEY_NAME_MAX_LENGTH = 100;
/** The policy for a new password, in characters (code points). */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 256;
/** The longest generation window `ZERO_GENERATION_WINDOW_SECONDS` accepts; counters are kept a day longer. */
export const MAX_GENERATION_WINDOW_SECONDS = 31 * 86_400;
