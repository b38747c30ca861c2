import { randomBytes } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConsoleService } from "../../gen/zero/v1/console_pb.js";

export interface TestAccount {
  accountId: string;
  email: string;
  password: string;
  /** `zero_session=…`, to send as a `cookie` header (with `origin: app.url` on writes). */
  cookie: string;
  /** A real key secret with the requested scopes. */
  apiKey: string;
}

/** A Connect client for the Console, as the browser uses it (HTTP/1.1). */
export function consoleClient(baseUrl: string): Client<typeof ConsoleService> {
  return createClient(ConsoleService, createConnectTransport({ baseUrl, httpVersion: "1.1" }));
}

/** Headers a browser would send with the session cookie. */
export function sessionHeaders(baseUrl: string, cookie: string): Record<string, string> {
  return { cookie, origin: new URL(baseUrl).origin };
}

/** Signs up through ConsoleService and returns the session cookie. */
export async function signUp(baseUrl: string, email: string, password: string): Promise<{ accountId: string; cookie: string }> {
  let setCookie = "";
  const { account } = await consoleClient(baseUrl).signUp({ email, password }, { onHeader: (headers) => (setCookie = headers.get("set-cookie") ?? "") });
  const cookie = setCookie.split(";")[0]!;
  if (!account || !cookie.startsWith("zero_session=")) throw new Error("sign-up did not start a session");
  return { accountId: account.id, cookie };
}

/** Signs in through ConsoleService (another device, say) and returns that session's cookie. */
export async function signIn(baseUrl: string, email: string, password: string): Promise<string> {
  let setCookie = "";
  await consoleClient(baseUrl).signIn({ email, password }, { onHeader: (headers) => (setCookie = headers.get("set-cookie") ?? "") });
  const cookie = setCookie.split(";")[0]!;
  if (!cookie.startsWith("zero_session=")) throw new Error("sign-in did not start a session");
  return cookie;
}

/**
 * A fresh account, signed in, with an API key carrying `scopes`: the real
 * path a person takes in the Console (SignUp, then CreateApiKey with the cookie).
 */
export async function createAccountWithKey(app: { url: string }, scopes: string[]): Promise<TestAccount> {
  const email = `user-${randomBytes(6).toString("hex")}@example.test`;
  const password = `pw-${randomBytes(12).toString("hex")}`;
  const { accountId, cookie } = await signUp(app.url, email, password);
  const { secret } = await consoleClient(app.url).createApiKey(
    { name: `test key (${scopes.join(", ") || "no scopes"})`, scopes },
    { headers: sessionHeaders(app.url, cookie) },
  );
  return { accountId, email, password, cookie, apiKey: secret };
}
