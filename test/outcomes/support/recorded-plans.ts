import { insertPlansWithinLimit } from "../../../src/executions/plan-repository.js";
import { initialStages } from "../../../src/executions/plan-transitions.js";
import { createAccountWithKey } from "../../support/accounts.js";
import type { TestApp } from "../../support/app.js";

/**
 * Records the plan that files put straight into a service's store stand for,
 * as the routes serve a tree only while its plan shows it: `planId`'s
 * first draft's preview, and with `published`, its site or book at that slug.
 */
export async function recordPlanFor(app: TestApp, planId: string, published?: { slug: string; mount?: "sites" | "books" }): Promise<void> {
  const { accountId } = await createAccountWithKey(app, ["read"]);
  const outcome = published?.mount === "books" ? "ebook" : "website";
  await app.store.db.transaction().execute(async (trx) => {
    await insertPlansWithinLimit(trx, [{ id: planId, accountId, goal: "A plan the test's files stand for", outcome, stages: initialStages(outcome) }], {
      limit: 1_000_000,
      windowSeconds: 3600,
    });
    // Cancelled before any worker sees it, so the engine writes nothing over the test's files.
    await trx.updateTable("plan_stages").set({ state: "cancelled" }).where("plan_id", "=", planId).execute();
    await trx
      .updateTable("plans")
      .set({
        status: "cancelled",
        preview_url: `${app.url}/preview/${planId}/`,
        published_url: published ? `${app.url}/${published.mount ?? "sites"}/${published.slug}/` : null,
      })
      .where("id", "=", planId)
      .execute();
  });
  if (!published) return;
  await app.artifacts.put(`index/slugs/${published.slug}`, planId);
}
