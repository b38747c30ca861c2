import type { GetCapabilitiesResponse } from "../../../gen/zero/v1/capabilities_pb.js";
import type { Plan } from "../../../gen/zero/v1/execution_pb.js";
import { LIST_LIMIT } from "../../api/limits.js";
import { capabilitiesApi, errorMessage, executionsApi, isSignedOut } from "./api.js";
import { ConfirmDialog } from "./confirm-dialog.js";
import { h, setBusy, showError } from "./dom.js";
import { shortGoal } from "./execution-card.js";
import { ExecutionList } from "./execution-list.js";
import { ExecutionUpdates } from "./execution-updates.js";
import { applyCapabilities, newExecutionForm, type StartForm } from "./new-execution-form.js";
import { pageHeading, type ViewContext } from "./view.js";

/** What the parts of the Executions view share. */
interface ExecutionsPage {
  context: ViewContext;
  dialog: ConfirmDialog;
  list: ExecutionList;
  updates: ExecutionUpdates;
  /** The stage to approve when a plan waiting for approval names none; the capabilities may tell a better one. */
  approvalStage: string;
}

/** Executions: start one from a goal, follow them live, approve the gate, open the results. */
export function renderExecutions(main: HTMLElement, context: ViewContext): () => void {
  // The cards' buttons reach `page` when clicked, by which time it is built.
  const list = new ExecutionList(context, {
    approve: (plan, gateId, button, error) => void resume(page, plan, [gateId ?? page.approvalStage], button, error, "Approved"),
    resume: (plan, button, error) => void resume(page, plan, [], button, error, "Resumed"),
    revise: (plan, feedback, form, error) => void revise(page, plan, feedback, form, error),
    cancel: (plan, button) => confirmCancel(page, plan, button),
    remove: (plan, button) => confirmDelete(page, plan, button),
  });
  const dialog = new ConfirmDialog(context);
  const start = newExecutionForm(context, (plan) => started(page, plan));
  const updates = new ExecutionUpdates(list, context, () => setBusy(start.form, true));
  const page: ExecutionsPage = { context, dialog, list, updates, approvalStage: "review" };

  main.append(
    pageHeading("Executions", "Describe a goal; project-zero plans it, writes and builds it, and waits for your approval before it publishes."),
    h("section", { class: "card", "aria-labelledby": "start-title" }, h("h2", { id: "start-title" }, "Start an execution"), start.form),
    h("section", { class: "card", "aria-labelledby": "executions-title" }, list.title, list.status, list.element, list.olderButton),
    dialog.element,
  );

  list.olderButton.addEventListener("click", () => void showOlder(page));
  void loadCapabilities(page, start);
  updates.start();
  return () => {
    updates.stop();
    dialog.element.close();
  };
}

async function loadCapabilities(page: ExecutionsPage, start: StartForm): Promise<void> {
  let caps: GetCapabilitiesResponse;
  try {
    caps = await capabilitiesApi.getCapabilities({});
  } catch {
    return; // The form's defaults match the documented limits.
  }
  page.approvalStage = caps.outcomes.find((o) => o.approvalStage)?.approvalStage ?? page.approvalStage;
  applyCapabilities(start, caps);
}

async function started(page: ExecutionsPage, plan: Plan | undefined): Promise<void> {
  if (plan) {
    page.list.upsert(plan);
    page.context.announce(`Execution started: ${plan.goal}`);
  }
  await page.updates.refresh();
}

async function resume(page: ExecutionsPage, plan: Plan, approve: string[], button: HTMLButtonElement, error: HTMLElement, verb: string): Promise<void> {
  button.disabled = true;
  showError(error, undefined);
  try {
    const response = await executionsApi.resumeExecution({ planId: plan.id, approve });
    if (response.plan) page.list.upsert(response.plan);
    page.context.announce(`${verb}: ${shortGoal(plan)}`);
    page.updates.schedulePoll();
  } catch (caught) {
    if (isSignedOut(caught)) return page.context.signedOut();
    button.disabled = false;
    showError(error, errorMessage(caught));
  }
}

function confirmCancel(page: ExecutionsPage, plan: Plan, opener: HTMLButtonElement): void {
  page.dialog.open(
    {
      title: `Cancel “${shortGoal(plan)}”?`,
      body: "A stage that is running stops, and nothing it writes afterwards is kept. A cancelled plan cannot be resumed; its preview stays until you delete it.",
      confirmLabel: "Cancel plan",
    },
    async () => {
      const { plan: cancelled } = await executionsApi.cancelExecution({ id: plan.id });
      if (cancelled) page.list.upsert(cancelled);
      page.context.announce(`Cancelled: ${shortGoal(plan)}`);
      // The redrawn card's Delete button: the Cancel button that opened the dialog is gone.
      return page.list.element.querySelector<HTMLElement>(`[data-plan-id="${plan.id}"] [data-focus-key="delete"]`) ?? undefined;
    },
    opener,
  );
}

function confirmDelete(page: ExecutionsPage, plan: Plan, opener: HTMLButtonElement): void {
  page.dialog.open(
    {
      title: `Delete “${shortGoal(plan)}”?`,
      body: "The plan, its history, its preview and its published site or book are removed, and their addresses stop working. This cannot be undone.",
      confirmLabel: "Delete plan",
    },
    async () => {
      await executionsApi.deleteExecution({ id: plan.id });
      page.list.remove(plan.id);
      page.context.announce(`Deleted: ${shortGoal(plan)}`);
      // The card and its button are gone; keep focus on the list rather than lose it to the page body.
      return page.list.title;
    },
    opener,
  );
}

async function revise(page: ExecutionsPage, plan: Plan, feedback: string, form: HTMLFormElement, error: HTMLElement): Promise<void> {
  setBusy(form, true);
  showError(error, undefined);
  try {
    const response = await executionsApi.resumeExecution({ planId: plan.id, feedback });
    if (response.plan) page.list.upsert(response.plan);
    page.context.announce(`New draft asked for: ${shortGoal(plan)}`);
    page.updates.schedulePoll();
  } catch (caught) {
    if (isSignedOut(caught)) return page.context.signedOut();
    setBusy(form, false);
    showError(error, errorMessage(caught));
  }
}

/** The next ten plans older than the oldest shown, below them; focus moves to the first new card. */
async function showOlder(page: ExecutionsPage): Promise<void> {
  const button = page.list.olderButton;
  const before = page.list.oldestId();
  if (!before) return;
  button.disabled = true;
  try {
    const { plans } = await executionsApi.listExecutions({ before });
    const shown = page.list.element.children.length;
    page.list.appendOlder(plans, plans.length >= LIST_LIMIT);
    page.list.element.children[shown]?.querySelector<HTMLElement>("h3")?.setAttribute("tabindex", "-1");
    page.list.element.children[shown]?.querySelector<HTMLElement>("h3")?.focus();
    page.context.announce(plans.length === 0 ? "No older executions." : `${plans.length} older executions shown.`);
    page.updates.schedulePoll();
  } catch (caught) {
    if (isSignedOut(caught)) return page.context.signedOut();
    page.list.showProblem(`Could not load older executions: ${errorMessage(caught)}`);
  } finally {
    button.disabled = false;
  }
}
