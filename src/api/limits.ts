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
