import type { Authenticator } from "../server/access.js";
import { invalidRequest } from "../server/errors.js";
import { type IdempotencyStore, runIdempotently } from "../server/idempotency.js";
import { clientGone, requestInfo } from "../server/request-info.js";
import { readJsonBody, type RestRouter } from "../server/rest.js";
import { given, parseOpenAiBody } from "./chat-request.js";
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
    const embed = async () => JSON.stringify(await deps.router.embed(request, { accountId, signal, fromClient: true, requestLog: requestInfo(exchange.req) }));
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
  // Left out, as OpenAI reads them: not checked, nor sent upstream as null.
  for (const name in body) if (!given(body[name])) delete body[name];
  if (!isEmbeddingsInput(body.input)) {
    throw invalidRequest(
      "`input` must be a non-empty string, or a non-empty array of non-empty strings, of token ids (whole numbers from 0), or of non-empty arrays of token ids",
      "input",
    );
  }
  if (body.dimensions !== undefined && !(Number.isInteger(body.dimensions) && (body.dimensions as number) > 0)) {
    throw invalidRequest("`dimensions` must be a whole number above 0", "dimensions");
  }
  if (body.encoding_format !== undefined && body.encoding_format !== "float" && body.encoding_format !== "base64") {
    throw invalidRequest("`encoding_format` must be float or base64", "encoding_format");
  }
  return body as GatewayRequest;
}

/** OpenAI's forms of `input`: one text, one list of token ids, or a list of either (the router counts one vector per input by the same forms). */
function isEmbeddingsInput(input: unknown): boolean {
  if (typeof input === "string") return input !== "";
  if (!Array.isArray(input) || input.length === 0) return false;
  if (typeof input[0] === "string") return input.every((text) => typeof text === "string" && text !== "");
  if (Array.isArray(input[0])) return input.every((tokens) => Array.isArray(tokens) && tokens.length > 0 && tokens.every(isTokenId));
  return input.every(isTokenId);
}

function isTokenId(value: unknown): boolean {
  return Number.isInteger(value) && (value as number) >= 0;
}
