import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "../../api/limits.js";
import { Code } from "@connectrpc/connect";
import { consoleApi, errorCode, errorMessage, isSignedOut } from "./api.js";
import { h, setBusy, showError } from "./dom.js";
import type { ViewContext } from "./view.js";

/**
 * "Change password": the current one, then the new one. The service checks
 * the current one, ends every session of the account and gives this page a
 * new one, so the person stays signed in here and nowhere else.
 */
export function changePasswordSection(context: ViewContext): HTMLElement {
  const current = h("input", {
    id: "current-password",
    name: "current-password",
    type: "password",
    autocomplete: "current-password",
    required: true,
  });
  // No minlength: the length is checked on submit and explained in words, in characters as the service counts.
  const next = h("input", {
    id: "new-password",
    name: "new-password",
    type: "password",
    autocomplete: "new-password",
    required: true,
    "aria-describedby": "new-password-hint",
  });
  const error = h("p", { class: "form-error", id: "password-error", role: "alert", hidden: true });
  const done = h("p", { class: "form-success", hidden: true });
  const form = h(
    "form",
    { class: "password-form", "aria-labelledby": "password-title" },
    // For password managers: whose password this is, as spelt (type "email" would rewrite a non-ASCII domain).
    h("input", { type: "text", name: "username", autocomplete: "username", value: context.account.email, readonly: true, hidden: true, tabindex: "-1" }),
    h("div", { class: "field" }, h("label", { for: "current-password" }, "Current password"), current),
    h(
      "div",
      { class: "field" },
      h("label", { for: "new-password" }, "New password"),
      next,
      h(
        "p",
        { class: "hint", id: "new-password-hint" },
        `${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters. Every other device signed in to this account is signed out; this one stays signed in.`,
      ),
    ),
    error,
    done,
    h("div", { class: "actions" }, h("button", { type: "submit", class: "button primary" }, "Change password")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void changePassword(context, { form, current, next, error, done });
  });
  return h("section", { class: "card", "aria-labelledby": "password-title" }, h("h2", { id: "password-title" }, "Change password"), form);
}

interface PasswordForm {
  form: HTMLFormElement;
  current: HTMLInputElement;
  next: HTMLInputElement;
  error: HTMLElement;
  done: HTMLElement;
}

async function changePassword(context: ViewContext, { form, current, next, error, done }: PasswordForm): Promise<void> {
  showError(error, undefined);
  done.hidden = true;
  const length = [...next.value].length;
  if (current.value === "") {
    showError(error, "Enter your current password.", current);
    current.focus();
    return;
  }
  if (length < PASSWORD_MIN_LENGTH || length > PASSWORD_MAX_LENGTH) {
    showError(error, `The new password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters (it has ${length}).`, next);
    next.focus();
    return;
  }
  setBusy(form, true);
  try {
    await consoleApi.changePassword({ currentPassword: current.value, newPassword: next.value });
    form.reset();
    done.textContent = "Password changed. Every other device signed in to this account has been signed out.";
    done.hidden = false;
    context.announce(done.textContent);
    setBusy(form, false);
  } catch (caught) {
    if (isSignedOut(caught)) return context.signedOut();
    setBusy(form, false);
    // The new one's length was checked here: what the service refuses is the current one, wrong (marked) or tried too often.
    showError(error, errorMessage(caught), ...(errorCode(caught) === Code.InvalidArgument ? [current] : []));
    current.focus();
    current.select();
  }
}
