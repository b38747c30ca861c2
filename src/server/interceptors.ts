import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { authorize, type Authenticator } from "./access.js";
import { authorizedKey, clientAddressKey, requestLogKey } from "./context.js";
import { toServiceError } from "./errors.js";

/**
 * Outermost: whatever a service throws leaves as a ServiceError. Unexpected
 * errors are logged with their cause and reach the client as a bare
 * `internal`, never with a stack trace or an internal message; the database
 * being away goes to the server's outage log, as for REST.
 */
export const errorInterceptor: Interceptor = (next) => async (req) => {
  const fail = (error: unknown) => {
    const info = req.contextValues.get(requestLogKey);
    return toServiceError(
      error,
      (cause) => info?.logUnexpected(cause, { procedure: req.url }),
      (cause) => info?.logDatabaseDown(cause),
    );
  };
  try {
    const res = await next(req);
    if (!res.stream) return res;
    const messages = res.message;
    return {
      ...res,
      message: (async function* () {
        try {
          yield* messages;
        } catch (error) {
          throw fail(error);
        }
      })(),
    };
  } catch (error) {
    throw fail(error);
  }
};

/**
 * A unary call's own deadline (`grpc-timeout`, `connect-timeout-ms`), which
 * Connect turns into the handler's signal but does not check once the
 * handler is done: one already run out is refused before any work, and an
 * answer ready only after it ends as DEADLINE_EXCEEDED, since its caller has
 * given up on it (what the handler set, a session cookie say, is not sent).
 * Streams watch their signal themselves. REST calls carry no deadline.
 */
export const deadlineInterceptor: Interceptor = (next) => async (req) => {
  if (req.stream) return next(req);
  const runOut = () => req.signal.reason instanceof ConnectError && req.signal.reason.code === Code.DeadlineExceeded;
  if (runOut()) throw req.signal.reason;
  const res = await next(req);
  if (runOut()) throw req.signal.reason;
  return res;
};

/** Runs the shared authorization step for every RPC. */
export function authInterceptor(authenticator: Authenticator): Interceptor {
  return (next) => async (req) => {
    if (req.contextValues.get(authorizedKey)) return next(req);
    await authorize(
      authenticator,
      { method: req.method, requestHeader: req.header, requestMethod: req.requestMethod, values: req.contextValues },
      req.contextValues.get(clientAddressKey),
    );
    return next(req);
  };
}
