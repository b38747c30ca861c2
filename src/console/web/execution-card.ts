import type { Plan } from "../../../gen/zero/v1/execution_pb.js";
import { FEEDBACK_MAX_LENGTH } from "../../api/limits.js";
import { h, showError } from "./dom.js";
import { timeElement } from "./format.js";
import { outcomeLabel, stageStateLabel, statusLabel } from "./labels.js";
import { historyDisclosure } from "./plan-history.js";

/** What a card's buttons do; the view carries them out. */
export interface PlanActions {
  /** Approves the stage waiting at the gate: `gateId` when the plan names it. */
  approve(plan: Plan, gateId: string | undefined, button: HTMLButtonElement, error: HTMLElement): void;
  /** Resumes a failed or interrupted plan. */
  resume(plan: Plan, button: HTMLButtonElement, error: HTMLElement): void;
  /** Asks for a new draft at the gate, with the person's words. */
  revise(plan: Plan, feedback: string, form: HTMLFormElement, error: HTMLElement): void;
  /** Asks, then cancels a plan that has not finished. */
  cancel(plan: Plan, button: HTMLButtonElement): void;
  /** Asks, then deletes a plan with its history and files. */
  remove(plan: Plan, button: HTMLButtonElement): void;
  /** Downloads the plan's built file from `link`, saying why when it cannot. */
  download(plan: Plan, link: HTMLAnchorElement, error: HTMLElement): void;
  /** The plan turned out not to exist any more (deleted elsewhere). */
  gone(plan: Plan): void;
}

/** One plan as a list item: its title, status, progress and stages, and what can be done with it. */
export function planCard(plan: Plan, actions: PlanActions): HTMLElement {
  const titleId = `plan-${plan.id}-title`;
  const title = plan.project?.name || shortGoal(plan);
  return h(
    "li",
    { class: `execution status-${plan.status}`, "data-plan-id": plan.id },
    h(
      "article",
      { "aria-labelledby": titleId },
      cardHead(plan, titleId, title),
      cardMeta(plan),
      progressRow(plan, title),
      stageList(plan),
      plan.warning ? h("p", { class: "notice notice-warn" }, plan.warning) : null,
      failureNotice(plan),
      draftList(plan, titleId),
      planActions(plan, titleId, actions),
      historyDisclosure(plan, () => actions.gone(plan)),
    ),
  );
}

const TITLE_LENGTH = 80;

/** The goal as a title: at most 80 characters, cut between whole characters (never inside an emoji). */
export function shortGoal(plan: Plan): string {
  const goal = plan.goal.trim();
  const characters = graphemes(goal);
  return characters.length > TITLE_LENGTH ? `${characters.slice(0, TITLE_LENGTH - 1).join("")}…` : goal;
}

/** What a reader counts as characters where the browser can tell (Intl.Segmenter), else code points. */
function graphemes(text: string): string[] {
  if (typeof Intl.Segmenter !== "function") return [...text];
  return Array.from(new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(text), (s) => s.segment);
}

function cardHead(plan: Plan, titleId: string, title: string): HTMLElement {
  return h(
    "div",
    { class: "execution-head" },
    h(
      "div",
      { class: "execution-title" },
      // Written by people (the goal, the project named from it): right to left when their language is.
      h("h3", { id: titleId, tabindex: "-1", "data-focus-key": "heading", dir: "auto" }, title),
      plan.project?.name ? h("p", { class: "goal", dir: "auto" }, plan.goal) : null,
    ),
    h("span", { class: `status status-${plan.status}` }, statusLabel(plan.status)),
  );
}

function cardMeta(plan: Plan): HTMLElement {
  return h(
    "p",
    { class: "meta" },
    h("span", {}, outcomeLabel(plan.outcome)),
    h("span", {}, "Started ", timeElement(plan.createdAt)),
    h("span", {}, "Updated ", timeElement(plan.updatedAt)),
    h("code", { class: "plan-id" }, plan.id),
  );
}

function progressRow(plan: Plan, title: string): HTMLElement {
  return h(
    "div",
    { class: "progress-row" },
    h("progress", { id: `plan-${plan.id}-progress`, max: 100, value: plan.progress, "aria-label": `Progress of ${title}` }),
    h("span", { class: "progress-value" }, `${plan.progress}%`),
  );
}

function stageList(plan: Plan): HTMLElement {
  return h(
    "ol",
    { class: "stages", "aria-label": "Stages" },
    ...plan.stages.map((stage) =>
      h(
        "li",
        { class: `stage stage-${stage.state}` },
        h("span", { class: "stage-dot", "aria-hidden": "true" }),
        h("span", { class: "stage-title" }, stage.title || stage.id),
        h("span", { class: "sr-only" }, `: ${stageStateLabel(stage.state)}`),
        // The plan's bar counts finished stages only; this is what moves during a long stage.
        stage.state === "running" && stage.progress > 0 ? h("span", { class: "stage-progress" }, `${stage.progress}%`) : null,
      ),
    ),
  );
}

function failureNotice(plan: Plan): HTMLElement | null {
  const failedStage = plan.stages.find((s) => s.state === "failed");
  return failedStage?.error ? h("p", { class: "notice notice-error" }, `${failedStage.title || failedStage.id} failed: ${failedStage.error.message}`) : null;
}

/**
 * The card's buttons and links. Every card has the same ones, so each is
 * described by the card's title: a list of a page's buttons then says which
 * plan each acts on, and its name stays the words it shows (what a person
 * using voice control says to press it).
 */
function planActions(plan: Plan, titleId: string, actions: PlanActions): HTMLElement {
  const error = h("p", { class: "form-error", id: `plan-${plan.id}-error`, role: "alert", hidden: true, "data-plan-error": true });
  const buttons: HTMLElement[] = [];
  const button = (label: string, className: string, focusKey: string) =>
    h("button", { type: "button", class: className, "data-focus-key": focusKey, "aria-describedby": titleId }, label);
  if (plan.status === "awaiting_approval") {
    const gateId = plan.stages.find((s) => s.state === "awaiting_approval")?.id;
    const approve = button("Approve and publish", "button primary small", "approve");
    approve.addEventListener("click", () => actions.approve(plan, gateId, approve, error));
    buttons.push(approve);
  } else if (plan.resumable && (plan.status === "failed" || plan.status === "interrupted")) {
    const retry = button("Resume", "button small", "resume");
    retry.addEventListener("click", () => actions.resume(plan, retry, error));
    buttons.push(retry);
  }
  const preview = safeUrl(plan.previewUrl);
  const published = safeUrl(plan.publishedUrl);
  if (preview) buttons.push(externalLink(preview, "Open preview", "preview", titleId));
  if (published) buttons.push(externalLink(published, plan.outcome === "ebook" ? "Open published ebook" : "Open published site", "published", titleId));
  if (isBuilt(plan)) {
    const download = h(
      "a",
      {
        class: "button small",
        href: `/api/execution/download?id=${encodeURIComponent(plan.id)}`,
        download: "",
        "data-focus-key": "download",
        "aria-describedby": titleId,
      },
      plan.outcome === "ebook" ? "Download EPUB" : "Download site (.zip)",
    );
    download.addEventListener("click", (event) => {
      // A modified click (new tab, save as) is the browser's to handle.
      if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      actions.download(plan, download, error);
    });
    buttons.push(download);
  }
  if (plan.status !== "succeeded" && plan.status !== "cancelled") {
    const cancel = button("Cancel plan", "button small danger", "cancel");
    cancel.addEventListener("click", () => actions.cancel(plan, cancel));
    buttons.push(cancel);
  }
  const remove = button("Delete", "button small ghost", "delete");
  remove.addEventListener("click", () => actions.remove(plan, remove));
  buttons.push(remove);
  return h(
    "div",
    { class: "execution-actions" },
    h("div", { class: "actions" }, ...buttons),
    plan.status === "awaiting_approval" ? feedbackForm(plan, titleId, actions, error) : null,
    error,
  );
}

/** At the gate: what should change, in the person's words, for a new draft instead of approving this one. */
function feedbackForm(plan: Plan, titleId: string, actions: PlanActions, error: HTMLElement): HTMLFormElement {
  const fieldId = `plan-${plan.id}-feedback`;
  const hintId = `${fieldId}-hint`;
  // No maxlength: it counts UTF-16 units, the service counts characters (code points); the length is checked on submit.
  const field = h("textarea", {
    id: fieldId,
    name: "feedback",
    rows: 2,
    required: true,
    dir: "auto",
    "aria-describedby": hintId,
    "data-focus-key": "feedback",
  });
  const form = h(
    "form",
    { class: "feedback-form" },
    h("label", { for: fieldId }, "Ask for changes"),
    field,
    h(
      "p",
      { id: hintId, class: "hint" },
      "Say what to change (a name, the tone, pages to add or drop); the rest is kept. The new draft waits here for your approval.",
    ),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit", class: "button small", "data-focus-key": "revise", "aria-describedby": titleId }, "Ask for a new draft"),
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const feedback = field.value.trim();
    const length = [...feedback].length;
    const problem =
      length === 0
        ? "Say what should change before asking for a new draft."
        : length > FEEDBACK_MAX_LENGTH
          ? `Feedback can be at most ${FEEDBACK_MAX_LENGTH} characters (it has ${length}).`
          : undefined;
    if (problem) {
      showError(error, problem, field);
      field.focus();
      return;
    }
    actions.revise(plan, feedback, form, error);
  });
  return form;
}

/** Every draft of a revised plan, oldest first, each at its own preview (described by the draft's name and the card's title). */
function draftList(plan: Plan, titleId: string): HTMLElement | null {
  if (plan.revisions.length === 0) return null;
  const firstDraft = safeUrl(plan.previewUrl?.replace(/-r\d+\/$/, "/"));
  return h(
    "section",
    { class: "drafts", "aria-label": "Drafts" },
    h(
      "ol",
      {},
      h(
        "li",
        {},
        h("span", { class: "draft-name", id: draftNameId(plan, 0) }, "First draft"),
        firstDraft ? externalLink(firstDraft, "Preview", "draft-0", `${draftNameId(plan, 0)} ${titleId}`) : null,
      ),
      ...plan.revisions.map((revision) => {
        const preview = safeUrl(revision.previewUrl);
        const nameId = draftNameId(plan, revision.number);
        return h(
          "li",
          {},
          h("span", { class: "draft-name", id: nameId }, `Revision ${revision.number}`),
          h("q", { class: "draft-feedback", dir: "auto" }, revision.feedback),
          preview
            ? externalLink(preview, "Preview", `draft-${revision.number}`, `${nameId} ${titleId}`)
            : // Written while the plan runs; one that stopped first (cancelled, failed) has none to show.
              h("span", { class: "muted" }, plan.status === "running" ? "being written…" : "not built"),
        );
      }),
    ),
  );
}

const draftNameId = (plan: Plan, revision: number) => `plan-${plan.id}-draft-${revision}`;

/** True once the stage that makes the plan's file (a site's build, a book's assembly) has succeeded. */
function isBuilt(plan: Plan): boolean {
  const maker = plan.outcome === "ebook" ? "assemble" : "build";
  return plan.stages.some((stage) => stage.id === maker && stage.state === "succeeded");
}

/** Only web links from the service become links: never `javascript:` or other schemes. */
function safeUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value, window.location.origin);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** A link that opens in a new tab; `describedBy`: the ids of what says which plan (and draft) it opens. */
function externalLink(href: string, label: string, focusKey: string, describedBy: string): HTMLAnchorElement {
  return h(
    "a",
    { class: "button small", href, target: "_blank", rel: "noopener noreferrer", "data-focus-key": focusKey, "aria-describedby": describedBy },
    label,
    h("span", { class: "sr-only" }, " (opens in a new tab)"),
    h("span", { class: "external", "aria-hidden": "true" }, " ↗"),
  );
}
