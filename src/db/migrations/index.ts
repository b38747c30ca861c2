import type { Migration } from "kysely/migration";
import * as foundation from "./2026-11-22T00-00_foundation.js";
import * as auth from "./2026-11-22T01-00_auth.js";
import * as executions from "./2026-11-22T01-04_executions.js";
import * as chat from "./2026-11-22T01-20_chat.js";
import * as authHardening from "./2026-11-24T00-00_auth-hardening.js";
import * as chatAccountDays from "./2026-11-24T00-10_chat-account-days.js";
import * as chatResponses from "./2026-11-25T00-00_chat-responses.js";
import * as planEvents from "./2026-11-26T02-00_plan-events.js";
import * as generationGranted from "./2026-11-26T05-00_generation-granted.js";
import * as planRevisions from "./2026-11-27T02-00_plan-revisions.js";
import * as artifacts from "./2026-11-27T03-00_artifacts.js";
import * as stageRetries from "./2026-11-27T05-00_stage-retries.js";
import * as freePoolLastGrant from "./2026-11-28T00-00_free-pool-last-grant.js";
import * as responseInputItems from "./2026-11-29T00-00_response-input-items.js";
import * as accountEmailNfc from "./2026-11-30T00-00_account-email-nfc.js";
import * as deletedPlans from "./2026-12-01T00-00_deleted-plans.js";
import * as planEventTimes from "./2026-12-02T00-00_plan-event-times.js";
import * as chatReasoning from "./2026-12-03T00-00_chat-reasoning.js";
import * as chatToolTurns from "./2026-12-03T01-00_chat-tool-turns.js";
import * as idempotencySortedHash from "./2026-12-04T00-00_idempotency-sorted-hash.js";
import * as responseTurns from "./2026-12-05T00-00_response-turns.js";

/**
 * Every migration, by name. Names sort in the order they apply (ISO date
 * first); a landed migration is never edited, only followed by a new one.
 */
export const migrations: Record<string, Migration> = {
  "2026-11-22T00-00_foundation": foundation,
  "2026-11-22T01-00_auth": auth,
  "2026-11-22T01-04_executions": executions,
  "2026-11-22T01-20_chat": chat,
  "2026-11-24T00-00_auth-hardening": authHardening,
  "2026-11-24T00-10_chat-account-days": chatAccountDays,
  "2026-11-25T00-00_chat-responses": chatResponses,
  "2026-11-26T02-00_plan-events": planEvents,
  "2026-11-26T05-00_generation-granted": generationGranted,
  "2026-11-27T02-00_plan-revisions": planRevisions,
  "2026-11-27T03-00_artifacts": artifacts,
  "2026-11-27T05-00_stage-retries": stageRetries,
  "2026-11-28T00-00_free-pool-last-grant": freePoolLastGrant,
  "2026-11-29T00-00_response-input-items": responseInputItems,
  "2026-11-30T00-00_account-email-nfc": accountEmailNfc,
  "2026-12-01T00-00_deleted-plans": deletedPlans,
  "2026-12-02T00-00_plan-event-times": planEventTimes,
  "2026-12-03T00-00_chat-reasoning": chatReasoning,
  "2026-12-03T01-00_chat-tool-turns": chatToolTurns,
  "2026-12-04T00-00_idempotency-sorted-hash": idempotencySortedHash,
  "2026-12-05T00-00_response-turns": responseTurns,
};
