import type { Config } from "../config.js";
import { OUTCOME_IDS, type OutcomeId } from "../api/outcomes.js";

/**
 * Outcomes that cannot run with this configuration. A website needs an
 * upstream or the offline writer; an ebook needs an upstream. The answer
 * names outcomes only, never the missing credential.
 */
export function unavailableOutcomes(config: Pick<Config, "upstreams" | "offlineWriter">): OutcomeId[] {
  const hasUpstream = config.upstreams.length > 0;
  return OUTCOME_IDS.filter((id) => {
    if (id === "website") return !hasUpstream && !config.offlineWriter;
    return !hasUpstream;
  });
}
