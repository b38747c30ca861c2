import { type Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { ErrorDetailSchema } from "../../gen/zero/v1/error_pb.js";
import { ExecutionService, PlanSchema, type Plan } from "../../gen/zero/v1/execution_pb.js";
import { restJson } from "../../src/server/json.js";
import { authHeaders, getExecution, postExecution, type Credential, type RestPlan } from "./executions.js";

/** One answer of the executions API, the same shape whichever transport carried it. */
export interface ApiAnswer {
  /** HTTP status for REST; for RPC the status the error type maps to (200 / 202 on success). */
  status: number;
  /** The error type (`{"error": {"type"}}` over REST, the ErrorDetail over RPC). */
  errorType?: string;
  /** Over RPC, the error's Connect code. */
  rpcCode?: Code;
  errorMessage?: string;
  /** The `unavailable` list of a 202 or of a 503. */
  unavailable?: string[];
  plan?: RestPlan;
  plans?: RestPlan[];
  headers: Headers;
}

/** The executions API through one transport; tests run the same scenarios through each. */
export interface ExecutionApi {
  name: string;
  /** `headers` go with the request: the REST header or the RPC metadata of the same name. */
  create(credential: Credential, body: { goal?: string; outcome?: string }, headers?: Record<string, string>): Promise<ApiAnswer>;
  resume(credential: Credential, body: { planId: string; approve?: string[]; feedback?: string; revision?: number }): Promise<ApiAnswer>;
  get(credential: Credential, id: string): Promise<ApiAnswer>;
  /** `before` pages back: `?before=` over REST, the `before` field over RPC. */
  list(credential: Credential, before?: string): Promise<ApiAnswer>;
}

/** `POST` / `GET /api/execution`. */
export function restApi(baseUrl: string): ExecutionApi {
  const answer = (res: { status: number; headers: Headers; body: Record<string, unknown> }): ApiAnswer => {
    const error = res.body.error as { type: string; message: string; unavailable?: string[] } | undefined;
    return {
      status: res.status,
      headers: res.headers,
      errorType: error?.type,
      errorMessage: error?.message,
      unavailable: (res.body.unavailable as string[] | undefined) ?? error?.unavailable,
      plan: res.body.plan as RestPlan | undefined,
      plans: res.body.plans as RestPlan[] | undefined,
    };
  };
  return {
    name: "REST",
    create: async (credential, body, headers) => answer(await postExecution(baseUrl, credential, body, { headers })),
    resume: async (credential, body) => answer(await postExecution(baseUrl, credential, body)),
    get: async (credential, id) => answer(await getExecution(baseUrl, credential, id)),
    list: async (credential, before) =>
      answer(
        before === undefined ? await getExecution(baseUrl, credential) : await getExecution(baseUrl, credential, undefined, new URLSearchParams({ before })),
      ),
  };
}

const STATUS_BY_TYPE: Record<string, number> = {
  invalid_request: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  conflict: 409,
  idempotency_key_in_progress: 409,
  idempotency_key_reused: 422,
  rate_limited: 429,
  outcome_unavailable: 503,
};

/** ExecutionService over the Connect protocol (HTTP/1.1) or over gRPC (HTTP/2). */
export function rpcApi(baseUrl: string, protocol: "connect" | "grpc"): ExecutionApi {
  const transport: Transport = protocol === "connect" ? createConnectTransport({ baseUrl, httpVersion: "1.1" }) : createGrpcTransport({ baseUrl });
  const client: Client<typeof ExecutionService> = createClient(ExecutionService, transport);
  const call = async (
    successStatus: number,
    run: (options: { headers: Record<string, string>; onHeader: (h: Headers) => void }) => Promise<{ plan?: Plan; plans?: Plan[]; unavailable?: string[] }>,
    credential: Credential,
  ): Promise<ApiAnswer> => {
    let headers = new Headers();
    try {
      const response = await run({ headers: authHeaders(baseUrl, credential), onHeader: (h) => (headers = h) });
      return {
        status: successStatus,
        headers,
        plan: response.plan ? (restJson(PlanSchema, response.plan) as unknown as RestPlan) : undefined,
        plans: response.plans?.map((p) => restJson(PlanSchema, p) as unknown as RestPlan),
        unavailable: response.unavailable,
      };
    } catch (error) {
      if (!(error instanceof ConnectError)) throw error;
      const detail = error.findDetails(ErrorDetailSchema)[0];
      return {
        status: STATUS_BY_TYPE[detail?.type ?? ""] ?? 500,
        headers: error.metadata,
        errorType: detail?.type,
        rpcCode: error.code,
        errorMessage: detail?.message,
        unavailable: detail?.unavailable,
      };
    }
  };
  return {
    name: protocol === "connect" ? "Connect RPC" : "gRPC",
    create: (credential, body, headers = {}) => call(202, (o) => client.createExecution(body, { ...o, headers: { ...o.headers, ...headers } }), credential),
    resume: (credential, body) => call(202, (o) => client.resumeExecution(body, o), credential),
    get: (credential, id) => call(200, (o) => client.getExecution({ id }, o), credential),
    list: (credential, before) => call(200, (o) => client.listExecutions(before === undefined ? {} : { before }, o), credential),
  };
}
