import type { ConnectRouter } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";
import { ServiceError } from "./errors.js";

export interface HealthDeps {
  /** Names reported individually; "" stands for the whole server. */
  serviceNames: readonly string[];
  /** Resolves when the database answers. */
  ping(): Promise<void>;
  /** Aborted when shutdown begins. */
  drainingSignal: AbortSignal;
}

const WATCH_INTERVAL_MS = 5000;

/** gRPC health checking: SERVING while the database answers and the server is not shutting down. */
export function registerHealth(router: ConnectRouter, deps: HealthDeps): void {
  const known = new Set(["", ...deps.serviceNames]);
  const status = async (): Promise<Status> => {
    if (deps.drainingSignal.aborted) return Status.NOT_SERVING;
    try {
      await deps.ping();
      return Status.SERVING;
    } catch {
      return Status.NOT_SERVING;
    }
  };
  router.service(Health, {
    async check(request) {
      if (!known.has(request.service)) throw new ServiceError("not_found", `unknown service "${request.service}"`);
      return { status: await status() };
    },
    async *watch(request, context) {
      if (!known.has(request.service)) {
        yield { status: Status.SERVICE_UNKNOWN };
        return;
      }
      let last: Status | undefined;
      while (!context.signal.aborted) {
        const current = await status();
        if (current !== last) yield { status: current };
        last = current;
        if (deps.drainingSignal.aborted) return;
        await nextLook([context.signal, deps.drainingSignal]);
      }
    },
    async list() {
      const current = await status();
      return { statuses: Object.fromEntries([...known].map((name) => [name, { status: current }])) };
    },
  });
}

/** Resolves after the watch interval, or at once when one of `signals` aborts (shutdown begins: say so now). */
function nextLook(signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const signal of signals) signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, WATCH_INTERVAL_MS).unref();
    for (const signal of signals) signal.addEventListener("abort", done, { once: true });
  });
}
