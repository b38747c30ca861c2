import { FEEDBACK_MAX_LENGTH, FEEDBACK_MIN_LENGTH, GOAL_MAX_LENGTH, GOAL_MIN_LENGTH } from "../api/limits.js";
import { invalidRequest } from "../server/errors.js";

/**
 * The goal as stored: trimmed of white space, then 8 to 2000 Unicode code
 * points (an emoji counts once, as a person would count it).
 */
export function validGoal(raw: string): string {
  const goal = raw.trim();
  const length = [...goal].length;
  if (length < GOAL_MIN_LENGTH || length > GOAL_MAX_LENGTH) {
    throw invalidRequest(`goal must be ${GOAL_MIN_LENGTH} to ${GOAL_MAX_LENGTH} characters after trimming white space (got ${length})`, "goal");
  }
  return goal;
}

/**
 * A resume's feedback (a revision), for REST and RPC alike: 1 to 2000 code
 * points after trimming, and never together with approvals.
 */
export function validFeedback(raw: string, approve: readonly string[]): string {
  if (approve.length > 0) throw invalidRequest("send either feedback (for a new draft) or approve, not both", "feedback");
  const feedback = raw.trim();
  const length = [...feedback].length;
  if (length < FEEDBACK_MIN_LENGTH || length > FEEDBACK_MAX_LENGTH) {
    throw invalidRequest(`feedback must be ${FEEDBACK_MIN_LENGTH} to ${FEEDBACK_MAX_LENGTH} characters after trimming white space (got ${length})`, "feedback");
  }
  return feedback;
}
