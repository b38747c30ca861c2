import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { ExecutionService } from "../../gen/zero/v1/execution_pb.js";
import { createAccountWithKey } from "../support/accounts.js";
import { startTestApp } from "../support/app.js";
import { HeldWork } from "../support/stage-work.js";

describe("graceful shutdown", () => {
  it("finishes even when an HTTP/2 client left a stream and keeps its connection open", async () => {
    const work = new HeldWork();
    work.instant = new Set(["understand", "outline", "build", "publish"]);
    const app = await startTestApp({ stageWork: work.resolver, env: { ZERO_SHUTDOWN_GRACE_MS: "500" } });
    const { apiKey } = await createAccountWithKey(app, ["read", "build"]);
    // The gRPC transport keeps its HTTP/2 session open after the stream is left.
    const executions = createClient(
      ExecutionService,
      createGrpcTransport({
        baseUrl: app.url,
        interceptors: [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${apiKey}`);
            return next(req);
          },
        ],
      }),
    );
    const { plan } = await executions.createExecution({ goal: "A website for a bakery in Lyon" });
    const held = await work.next();
    for await (const _ of executions.watchExecution({ id: plan!.id })) break;
    // The plan changes after the client left: the server's stream has something to say to nobody.
    held.succeed();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const closed = app.close().then(() => "closed");
    const outcome = await Promise.race([closed, new Promise((resolve) => setTimeout(() => resolve("still open"), 15_000))]);
    expect(outcome).toBe("closed");
  });
});
