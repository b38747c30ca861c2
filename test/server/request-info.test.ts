import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/observability/logger.js";
import { RepeatingFailure } from "../../src/observability/repeating-failure.js";
import { createZeroClient } from "../../src/client/node.js";
import { answerWhileStarting } from "../../src/server/http-handler.js";
import { ListeningRequests, RequestInfo, SHUTTING_DOWN } from "../../src/server/request-info.js";

const logger = createLogger("silent");
const databaseOutage = new RepeatingFailure(logger, "reaching the database");
const request = (listening: ListeningRequests, id: string) => new RequestInfo(id, "127.0.0.1", logger, listening, databaseOutage);
describe("the requests a shutdown tells", () => {
  it("a request that asks for its hang-up signal after its response closed gets it aborted, and is never listed", () => {
    const listening = new ListeningRequests();
    const late = request(listening, "late");
    late.responseClosed(false);
    const signal = late.hangUpSignal;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).not.toBe(SHUTTING_DOWN);
    expect(listening.newest).toBeUndefined();
  });

  it("leaves the list when its response closes, from any place in it", () => {
    const listening = new ListeningRequests();
    const [a, b, c] = ["a", "b", "c"].map((id) => request(listening, id)) as [RequestInfo, RequestInfo, RequestInfo];
    const signals = [a, b, c].map((info) => info.hangUpSignal);
    b.responseClosed(true);
    expect(listening.shutDown()).toBe(2);
    expect(signals.map((signal) => signal.aborted)).toEqual([true, false, true]);

    const emptied = new ListeningRequests();
    const all = ["d", "e", "f"].map((id) => request(emptied, id));
    for (const info of all) void info.hangUpSignal;
    for (const info of [all[1]!, all[2]!, all[0]!]) info.responseClosed(true);
    expect(emptied.newest).toBeUndefined();
    expect(emptied.shutDown()).toBe(0);
  });

  it("tells every listed request, and one that asks for its signal after the grace ended gets it already aborted", () => {
    const listening = new ListeningRequests();
    const early = request(listening, "early");
    const before = early.hangUpSignal;
    const waiting = request(listening, "waiting");
    expect(listening.shutDown()).toBe(1);
    expect(before.reason).toBe(SHUTTING_DOWN);
    expect(waiting.hangUpSignal.reason).toBe(SHUTTING_DOWN);
  });

  it("one server's shutdown tells only its own requests", () => {
    const [one, other] = [new ListeningRequests(), new ListeningRequests()];
    const mine = request(one, "mine").hangUpSignal;
    const theirs = request(other, "theirs").hangUpSignal;
    one.shutDown();
    expect(mine.aborted).toBe(true);
    expect(theirs.aborted).toBe(false);
  });
});

describe("the request id of an answer", () => {
  // Found operating the service: the 503s answered while the database started were the only answers without one.
  it("is on the answers given while the service starts: the caller's when it is acceptable, else one of ours", async () => {
    await whileStarting(async (base) => {
      const idOf = async (path: string, headers: Record<string, string> = {}) => (await fetch(`${base}${path}`, { headers })).headers.get("x-request-id");
      expect(await idOf("/v1/models", { "x-request-id": "lb-7f3a.2" })).toBe("lb-7f3a.2");
      expect(await idOf("/api/executions", { "x-request-id": "not acceptable" })).toMatch(/^req_/);
      expect(await idOf("/healthz")).toMatch(/^req_/);
      expect(await idOf("/readyz")).toMatch(/^req_/);
    });
  });
});

describe("the answers given while the service starts", () => {
  // Found by a review of the typed client: RPCs got REST's error shape then, so a Connect or gRPC client lost the message and took it for a proxy's.
  it("are the RPC protocols' own for an RPC, with the service's error detail", async () => {
    await whileStarting(async (base) => {
      const connect = await fetch(`${base}/zero.v1.ExecutionService/ListExecutions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer zk_x" },
        body: "{}",
      });
      expect(connect.status).toBe(503);
      expect(connect.headers.get("retry-after")).toBe("1");
      expect(await connect.json()).toMatchObject({
        code: "unavailable",
        message: "the service is starting up; try again shortly",
        details: [{ type: "zero.v1.ErrorDetail" }],
      });

      const error = await createZeroClient({ baseUrl: base, apiKey: "zk_x" })
        .executions.list()
        .catch((caught: unknown) => caught);
      expect(error).toMatchObject({ type: "unavailable", fromServer: true, message: "the service is starting up; try again shortly", retryAfterSeconds: 1 });
      const watched = await (async () => {
        for await (const _plan of createZeroClient({ baseUrl: base, apiKey: "zk_x" }).executions.watch("pln_x")) return "a plan";
      })().catch((caught: unknown) => caught);
      expect(watched).toMatchObject({ type: "unavailable", fromServer: true, message: "the service is starting up; try again shortly" });

      // REST keeps its own shape.
      const rest = await fetch(`${base}/api/executions`);
      expect([rest.status, await rest.json()]).toEqual([503, { error: { type: "unavailable", message: "the service is starting up; try again shortly" } }]);
    });
  });
});

/** Runs `use` against a port that answers as the service does while it starts. */
async function whileStarting(use: (base: string) => Promise<void>): Promise<void> {
  const server = http.createServer(answerWhileStarting);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    await use(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}
