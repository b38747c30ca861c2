import type { GetCapabilitiesResponse } from "../../../gen/zero/v1/capabilities_pb.js";
import type { Plan } from "../../../gen/zero/v1/execution_pb.js";
import { LIST_LIMIT } from "../../api/limits.js";
import { newestDraft } from "../../api/plans.js";
import { capabilitiesApi, errorMessage, executionsApi, isConflict, isNotFound, isSignedOut, sentence, UNAVAILABLE, UNREACHABLE } from "./api.js";
import { ConfirmDialog } from "./confirm-dialog.js";
import { focusIsLost, h, setBusy, showError } from "./dom.js";
import { shortGoal } from "./execution-card.js";
import { ExecutionList } from "./execution-list.js";
import { ExecutionUpdates } from "./execution-updates.js";
import { statusInWords } from "./labels.js";
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
    download: (plan, link, error) => void download(page, plan, link, error),
    gone: (plan) => gone(page, plan),
  });
  const dialog = new ConfirmDialog(context);
  const start = newExecutionForm(context, (plan) => started(page, plan));
  const updates = new ExecutionUpdates(list, context, () => setBusy(start.form, true));
  const page: ExecutionsPage = { context, dialog, list, updates, approvalStage: "review" };

  main.append(
    pageHeading("Executions", "Describe a goal; project-zero plans it, writes and builds it, and waits for your approval before it publishes."),
    h("section", { class: "card", "aria-labelledby": "start-title" }, h("h2", { id: "start-title" }, "Start an execution"), start.form),
    h("section", { class: "card", "aria-labelledby": "executions-title" }, list.title, list.notice, list.status, list.element, list.olderButton),
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
    // An approval names the draft on the card, so a newer one, made elsewhere meanwhile, is not published unseen.
    const response = await executionsApi.resumeExecution({ planId: plan.id, approve, ...(approve.length > 0 ? { revision: newestDraft(plan) } : {}) });
    if (response.plan) page.list.upsert(response.plan);
    page.context.announce(`${verb}: ${shortGoal(plan)}`);
    page.updates.schedulePoll();
    // The pressed button was disabled (and went with the redraw): the card's title keeps focus in the card.
    if (focusIsLost()) page.list.cardHeading(plan.id)?.focus();
  } catch (caught) {
    if (await settleFailure(page, plan, caught)) return;
    button.disabled = false;
    showError(error, errorMessage(caught));
  }
}

/**
 * After an action failed: a plan that is gone loses its card, and one whose
 * state did not allow the action (it changed in another tab or through the
 * API) is read again, so its card shows what it is now, saying why nothing
 * was done. True when that was the case; otherwise the caller shows the error.
 */
async function settleFailure(page: ExecutionsPage, plan: Plan, caught: unknown): Promise<boolean> {
  if (isSignedOut(caught)) {
    page.context.signedOut();
    return true;
  }
  if (isNotFound(caught)) {
    gone(page, plan);
    return true;
  }
  if (!isConflict(caught)) return false;
  let fresh: Plan | undefined;
  try {
    fresh = await page.updates.reread(plan.id);
  } catch {
    return false;
  }
  if (!fresh) {
    gone(page, plan);
    return true;
  }
  // Said on the card until the person acts on it, while it still applies: a newer draft is written, then waits at the gate.
  const newer = newestDraft(fresh) !== newestDraft(plan);
  const message = newer
    ? "Not done: a newer draft was asked for elsewhere; look at it before you approve or ask for changes."
    : `Not done: this plan changed elsewhere and ${statusInWords(fresh.status)}.`;
  page.list.showCardError(plan.id, message, newer ? [fresh.status, "running", "awaiting_approval"] : [fresh.status]);
  if (focusIsLost()) page.list.cardHeading(plan.id)?.focus();
  return true;
}

/**
 * A plain link would hand a failed download to the browser, which shows at
 * most "Failed" in its download list: a session that ended, a plan deleted
 * elsewhere or a file not built yet would go unexplained. The file is asked
 * for first (HEAD); only a file that is there is downloaded.
 */
async function download(page: ExecutionsPage, plan: Plan, link: HTMLAnchorElement, error: HTMLElement): Promise<void> {
  showError(error, undefined);
  let answer: Response;
  try {
    answer = await fetch(link.href, { method: "HEAD" });
  } catch {
    showError(error, UNREACHABLE);
    return;
  }
  if (answer.ok) {
    // The answer is an attachment: the browser saves it and the page stays.
    window.location.assign(link.href);
    return;
  }
  if (answer.status === 401) return page.context.signedOut();
  if (answer.status === 404 && !(await page.updates.reread(plan.id).catch(() => plan))) return gone(page, plan);
  showError(error, await downloadRefusal(link.href, answer.status));
}

/** Why a download was refused, in the service's words (a HEAD answer has no body to carry them). */
async function downloadRefusal(href: string, status: number): Promise<string> {
  try {
    const body = (await (await fetch(href)).json()) as { error?: { message?: unknown } };
    if (typeof body.error?.message === "string") return sentence(body.error.message);
  } catch {
    // Said below.
  }
  return status >= 500 ? UNAVAILABLE : "The download failed. Try again.";
}

/** A plan deleted elsewhere: its card goes, with a word about it, and focus stays on the list. */
function gone(page: ExecutionsPage, plan: Plan): void {
  const focusWasInCard = page.list.element.querySelector(`[data-plan-id="${plan.id}"]`)?.contains(document.activeElement) ?? false;
  page.updates.forget(plan.id);
  page.list.showNotice(`“${shortGoal(plan)}” no longer exists: it was deleted elsewhere.`);
  if (focusWasInCard || focusIsLost()) page.list.title.focus();
}

function confirmCancel(page: ExecutionsPage, plan: Plan, opener: HTMLButtonElement): void {
  page.dialog.open(
    {
      title: `Cancel “${shortGoal(plan)}”?`,
      body: "A stage that is running stops, and nothing it writes afterwards is kept. A cancelled plan cannot be resumed; its preview stays until you delete it.",
      confirmLabel: "Cancel plan",
    },
    async () => {
      try {
        const { plan: cancelled } = await executionsApi.cancelExecution({ id: plan.id });
        if (cancelled) page.list.upsert(cancelled);
        page.context.announce(`Cancelled: ${shortGoal(plan)}`);
      } catch (caught) {
        if (isSignedOut(caught) || !(await settleFailure(page, plan, caught))) throw caught;
        return page.list.cardHeading(plan.id) ?? page.list.title;
      }
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
      try {
        await executionsApi.deleteExecution({ id: plan.id });
        page.updates.forget(plan.id);
        page.context.announce(`Deleted: ${shortGoal(plan)}`);
      } catch (caught) {
        // Already deleted elsewhere: what was asked for is done.
        if (!isNotFound(caught)) throw caught;
        gone(page, plan);
      }
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
    const response = await executionsApi.resumeExecution({ planId: plan.id, feedback, revision: newestDraft(plan) });
    page.list.feedbackSent(plan.id);
    if (response.plan) page.list.upsert(response.plan);
    page.context.announce(`New draft asked for: ${shortGoal(plan)}`);
    page.updates.schedulePoll();
    // The form went with the redrawn card.
    if (focusIsLost()) page.list.cardHeading(plan.id)?.focus();
  } catch (caught) {
    setBusy(form, false);
    if (await settleFailure(page, plan, caught)) return;
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
    const firstNew = page.list.element.children[shown]?.getAttribute("data-plan-id");
    if (firstNew) page.list.cardHeading(firstNew)?.focus();
    page.context.announce(plans.length === 0 ? "No older executions." : `${plans.length} older executions shown.`);
    page.updates.schedulePoll();
  } catch (caught) {
    if (isSignedOut(caught)) return page.context.signedOut();
    page.list.showProblem(`Could not load older executions: ${errorMessage(caught)}`);
  } finally {
    button.disabled = false;
  }
}
