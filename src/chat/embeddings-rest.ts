import type { Authenticator } from "../server/access.js";
import { invalidRequest } from "../server/errors.js";
import { type IdempotencyStore, runIdempotently } from "../server/idempotency.js";
import { clientGone } from "../server/request-info.js";
import { readJsonBody, type RestRouter } from "../server/rest.js";
import { parseOpenAiBody } from "./chat-request.js";
import type { ChatRouter } from "./chat-router.js";
import type { GatewayRequest } from "./chat-types.js";
import { authenticateBearer, idempotencyKeyOf, MAX_BODY_BYTES, sendAnswer } from "./openai-http.js";

/**
 * `POST /v1/embeddings`: OpenAI's embeddings for the alias, from upstreams
 * that declare an embedding model. An `Idempotency-Key` works as for chat
 * completions: the same body again replays the first answer.
 */
export function embeddingsRoutes(rest: RestRouter, deps: { router: ChatRouter; idempotency: IdempotencyStore; authenticator: Authenticator }): void {
  rest.add("POST", "/v1/embeddings", async (exchange) => {
    const { accountId } = await authenticateBearer(exchange, deps.authenticator);
    const request = parseEmbeddingsRequest(await readJsonBody(exchange.req, { maxBytes: MAX_BODY_BYTES }));
    const signal = exchange.hangUp;
    const embed = async () => JSON.stringify(await deps.router.embed(request, { accountId, signal, fromClient: true }));
    const key = idempotencyKeyOf(exchange.req);
    // The body is wrapped so that a key used on another route with the same body is still another request.
    const result =
      key === undefined
        ? { json: await embed(), replayed: false }
        : await runIdempotently(deps.idempotency, { accountId, key, request: { embeddings: request } }, embed);
    if (!clientGone(signal)) sendAnswer(exchange.res, result);
  });
}

function parseEmbeddingsRequest(json: unknown): GatewayRequest {
  const body = parseOpenAiBody(json);
  const input = body.input;
  const valid = (typeof input === "string" && input !== "") || (Array.isArray(input) && input.length > 0);
  if (!valid) throw invalidRequest("`input` must be a non-empty string or array", "input");
  if (body.encoding_format !== undefined && body.encoding_format !== "float" && body.encoding_format !== "base64") {
    throw invalidRequest("`encoding_format` must be float or base64", "encoding_format");
  }
  return body as GatewayRequest;
}
