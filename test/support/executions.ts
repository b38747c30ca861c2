import { setTimeout as sleep } from "node:timers/promises";

/** A plan as the REST routes render it. */
export interface RestPlan {
  id: string;
  goal: string;
  outcome: string;
  status: string;
  progress: number;
  resumable: boolean;
  project: { id: string; name: string; slug: string } | null;
  warning: string | null;
  previewUrl: string | null;
  publishedUrl: string | null;
  stages: { id: string; title: string; state: string; attempts: number; error: { type: string; message: string } | null; progress: number }[];
  createdAt: string;
  updatedAt: string;
  revisions: { number: number; feedback: string; createdAt: string; previewUrl: string | null }[];
}

export interface RestAnswer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

/** Credentials: an API key, or a browser session cookie (sent with a same-origin `Origin`). */
export type Credential = { apiKey: string } | { cookie: string } | undefined;

export function authHeaders(baseUrl: string, credential: Credential): Record<string, string> {
  if (!credential) return {};
  if ("apiKey" in credential) return { authorization: `Bearer ${credential.apiKey}` };
  return { cookie: credential.cookie, origin: new URL(baseUrl).origin };
}

/** POST /api/execution with a JSON body (or raw text, to test refusals). */
export async function postExecution<T = Record<string, unknown>>(
  baseUrl: string,
  credential: Credential,
  body: unknown,
  options: { raw?: string; contentType?: string; headers?: Record<string, string> } = {},
): Promise<RestAnswer<T>> {
  const res = await fetch(`${baseUrl}/api/execution`, {
    method: "POST",
    headers: { "content-type": options.contentType ?? "application/json", ...authHeaders(baseUrl, credential), ...options.headers },
    body: options.raw ?? JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as T };
}

/** GET /api/execution, with `?id=` when given, or other query parameters (`before`). */
export async function getExecution<T = Record<string, unknown>>(
  baseUrl: string,
  credential: Credential,
  id?: string,
  query?: URLSearchParams,
): Promise<RestAnswer<T>> {
  const params = new URLSearchParams(query);
  if (id !== undefined) params.set("id", id);
  const url = params.size === 0 ? `${baseUrl}/api/execution` : `${baseUrl}/api/execution?${params}`;
  const res = await fetch(url, { headers: authHeaders(baseUrl, credential) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as T };
}

/** Reads the plan until `until` holds (the engine runs after the 202). */
export async function waitForPlan(
  baseUrl: string,
  credential: Credential,
  id: string,
  until: (plan: RestPlan) => boolean,
  timeoutMs = 15_000,
): Promise<RestPlan> {
  const deadline = Date.now() + timeoutMs;
  let last: RestPlan | undefined;
  while (Date.now() < deadline) {
    const { status, body } = await getExecution<{ plan: RestPlan }>(baseUrl, credential, id);
    if (status !== 200) throw new Error(`GET /api/execution?id=${id} answered ${status}`);
    last = body.plan;
    if (until(last)) return last;
    await sleep(25);
  }
  throw new Error(`plan ${id} did not reach the expected state; last: ${JSON.stringify(last)}`);
}
