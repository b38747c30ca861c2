import { GOAL_MAX_LENGTH, GOAL_MIN_LENGTH } from "../api/limits.js";
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
