import type { Account } from "../../../gen/zero/v1/console_pb.js";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "../../api/limits.js";
import { Code } from "@connectrpc/connect";
import { consoleApi, errorCode, errorMessage } from "./api.js";
import { h, replaceChildren, setBusy, showError } from "./dom.js";

export type AuthMode = "sign-in" | "sign-up";

export interface AuthHandlers {
  onSignedIn(account: Account): void;
}

const COPY = {
  "sign-in": {
    title: "Sign in to the Console",
    lede: "Manage your API keys and follow your executions.",
    submit: "Sign in",
    busy: "Signing in…",
    switchText: "New to project-zero?",
    switchLink: "Create an account",
    switchPath: "/console/sign-up",
    passwordAutocomplete: "current-password",
  },
  "sign-up": {
    title: "Create your account",
    lede: "One account holds your API keys and your executions.",
    submit: "Create account",
    busy: "Creating account…",
    switchText: "Already have an account?",
    switchLink: "Sign in",
    switchPath: "/console/sign-in",
    passwordAutocomplete: "new-password",
  },
} as const;

/**
 * Sign-in and sign-up: one form, two wordings. The server sets the HttpOnly
 * session cookie. `notice` says why the person is here (signed out, session
 * ended), above the form.
 */
export function renderAuth(root: HTMLElement, mode: AuthMode, notice: string | undefined, handlers: AuthHandlers): void {
  const copy = COPY[mode];
  const email = h("input", {
    id: "auth-email",
    name: "email",
    // Not type="email": Chromium refuses a non-ASCII part before the "@" and rewrites a non-ASCII domain to punycode; the service checks the address as typed.
    type: "text",
    inputmode: "email",
    autocomplete: "email",
    required: true,
    spellcheck: "false",
    autocapitalize: "none",
  });
  const password = h("input", {
    id: "auth-password",
    name: "password",
    type: "password",
    autocomplete: copy.passwordAutocomplete,
    required: true,
    // No minlength / maxlength: they count UTF-16 units (an emoji is two), the service counts characters; checked on submit.
    "aria-describedby": mode === "sign-up" ? "auth-password-hint" : undefined,
  });
  const error = h("p", { class: "form-error", id: "auth-error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "button primary wide" }, copy.submit);
  const form = h(
    "form",
    { class: "stack", "aria-labelledby": "auth-title" },
    h("div", { class: "field" }, h("label", { for: "auth-email" }, "Email"), email),
    h(
      "div",
      { class: "field" },
      h("label", { for: "auth-password" }, "Password"),
      password,
      mode === "sign-up" &&
        h("p", { class: "hint", id: "auth-password-hint" }, `At least ${PASSWORD_MIN_LENGTH} characters. A few unrelated words make a strong one.`),
    ),
    error,
    submit,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError(error, undefined);
    // Only a new password has a policy: at sign-in, one outside it is simply a wrong one, and the service says so.
    const length = [...password.value].length;
    if (mode === "sign-up" && (length < PASSWORD_MIN_LENGTH || length > PASSWORD_MAX_LENGTH)) {
      showError(error, `The password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters (it has ${length}).`, password);
      password.focus();
      return;
    }
    setBusy(form, true);
    submit.textContent = copy.busy;
    try {
      const request = { email: email.value, password: password.value };
      const response = mode === "sign-in" ? await consoleApi.signIn(request) : await consoleApi.signUp(request);
      password.value = "";
      if (!response.account) throw new Error("the service did not return the account");
      handlers.onSignedIn(response.account);
    } catch (caught) {
      setBusy(form, false);
      submit.textContent = copy.submit;
      // A wrong sign-in could be either field; a taken address is the email's. Other errors (the service away) are no field's.
      const code = errorCode(caught);
      showError(error, errorMessage(caught), ...(code === Code.Unauthenticated ? [email, password] : code === Code.AlreadyExists ? [email] : []));
      password.focus();
    }
  });
  const switchLink = h("a", { href: copy.switchPath, "data-nav": true }, copy.switchLink);
  replaceChildren(
    root,
    h(
      "main",
      { id: "main", class: "auth", tabindex: "-1" },
      h(
        "div",
        { class: "auth-card card" },
        h("div", { class: "brand brand-large" }, h("img", { src: "/console/assets/icon.svg", alt: "", width: 36, height: 36 }), h("span", {}, "project-zero")),
        h("h1", { id: "auth-title", tabindex: "-1" }, copy.title),
        h("p", { class: "lede" }, copy.lede),
        notice ? h("p", { class: "notice notice-info" }, notice) : null,
        form,
        h("p", { class: "switch" }, `${copy.switchText} `, switchLink),
      ),
    ),
  );
}
