/**
 * What a person typed and has not sent, kept in this tab (sessionStorage)
 * so that the session ending, a reload or a visit to another page does not
 * lose it; forgotten once sent, and at sign-out, so the next person in this
 * tab does not find it.
 */
const GOAL_DRAFT = "zero.console.goal-draft";

export function goalDraft(): string {
  try {
    return sessionStorage.getItem(GOAL_DRAFT) ?? "";
  } catch {
    return "";
  }
}

export function keepGoalDraft(goal: string): void {
  try {
    if (goal.trim() === "") sessionStorage.removeItem(GOAL_DRAFT);
    else sessionStorage.setItem(GOAL_DRAFT, goal);
  } catch {
    // Storage full or refused (a private window's quota): the draft is only not kept.
  }
}

export function forgetDrafts(): void {
  keepGoalDraft("");
}
