/** The outcomes the service can produce. */
export const OUTCOME_IDS = ["website", "ebook"] as const;
export type OutcomeId = (typeof OUTCOME_IDS)[number];
export const DEFAULT_OUTCOME: OutcomeId = "website";

/** The stage that waits for a person's approval. */
export const APPROVAL_STAGE = "review";

export interface StageDefinition {
  id: string;
  title: string;
}

/** The stages of each outcome, in the order they run. */
export const OUTCOME_STAGES: Readonly<Record<OutcomeId, readonly StageDefinition[]>> = {
  website: [
    { id: "understand", title: "Understand the goal" },
    { id: "outline", title: "Outline the site" },
    { id: "write", title: "Write the pages" },
    { id: "build", title: "Build the site" },
    { id: APPROVAL_STAGE, title: "Review and approve" },
    { id: "publish", title: "Publish" },
  ],
  ebook: [
    { id: "understand", title: "Understand the goal" },
    { id: "outline", title: "Outline the chapters" },
    { id: "write", title: "Write the chapters" },
    { id: "assemble", title: "Assemble the book" },
    { id: APPROVAL_STAGE, title: "Review and approve" },
    { id: "publish", title: "Publish" },
  ],
};

export function isOutcomeId(value: string): value is OutcomeId {
  return (OUTCOME_IDS as readonly string[]).includes(value);
}
