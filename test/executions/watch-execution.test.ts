import { ConnectError, Code, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecutionService, type Plan } from "../../gen/zero/v1/execution_pb.js";
import { consoleClient, createAccountWithKey, sessionHeaders, signIn, type TestAccount } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { ScriptedWork } from "../support/stage-work.js";

describe.each([
  { name: "Connect", transport: (url: string) => createConnectTransport({ baseUrl: url, httpVersion: "1.1" }) },
  { name: "gRPC", transport: (url: string) => createGrpcTransport({ baseUrl: url }) },
])("WatchExecution over $name", ({ transport }) => {
  const work = new ScriptedWork();
  let app: TestApp;
  let account: TestAccount;
  let client: ReturnType<typeof createClient<typeof ExecutionService>>;
  const headers = () => ({ authorization: `Bearer ${account.apiKey}` });
  beforeAll(async () => {
    app = await startTestApp({ stageWork: work.resolver });
    account = await createAccountWithKey(app, ["build", "read"]);
    client = createClient(ExecutionService, transport(app.url));
  });
  afterAll(() => app.close());

  async function collect(id: string): Promise<Plan[]> {
    const plans: Plan[] = [];
    for await (const { plan } of client.watchExecution({ id }, { headers: headers() })) plans.push(plan!);
    return plans;
  }

  it("streams the plan at each change until it stops at the gate, then ends", async () => {
    const { plan } = await client.createExecution({ goal: "A site for my bakery hold@understand" }, { headers: headers() });
    const stream = client.watchExecution({ id: plan!.id }, { headers: headers() })[Symbol.asyncIterator]();
    const first = await stream.next();
    expect(first.value?.plan?.status).toBe("running");
    // Only now does the work move on: every later message is a change the stream saw happen.
    (await work.held(plan!.id, "understand")).succeed();
    const seen = [first.value!.plan!];
    for (let next = await stream.next(); !next.done; next = await stream.next()) seen.push(next.value.plan!);
    expect(seen.at(-1)!.status).toBe("awaiting_approval");
    expect(seen.at(-1)!.resumable).toBe(true);
    // Each message is a change: progress never goes back and the stream saw the work move.
    const progress = seen.map((p) => p.progress);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(new Set(seen.map((p) => p.updatedAt?.nanos)).size).toBe(seen.length);

    const resumed = collect(plan!.id);
    expect((await resumed).map((p) => p.status)).toEqual(["awaiting_approval"]);
    await client.resumeExecution({ planId: plan!.id, approve: ["review"] }, { headers: headers() });
    const final = await collect(plan!.id);
    expect(final.at(-1)!.status).toBe("succeeded");
    expect(final.at(-1)!.progress).toBe(100);
  });

  it("ends at a failure too", async () => {
    const { plan } = await client.createExecution({ goal: "A site for a bike shop fail@write" }, { headers: headers() });
    const seen = await collect(plan!.id);
    expect(seen.at(-1)!.status).toBe("failed");
    expect(seen.at(-1)!.stages[2]!.error?.type).toBe("writer_error");
  });

  it("ends with not_found when the plan is deleted while watched, not as if a running plan had come to rest", async () => {
    const { plan } = await client.createExecution({ goal: "A site for a choir hold@understand" }, { headers: headers() });
    await work.held(plan!.id, "understand");
    const seen: string[] = [];
    const watched = (async () => {
      for await (const { plan: now } of client.watchExecution({ id: plan!.id }, { headers: headers() })) {
        seen.push(now!.status);
        if (seen.length === 1) await client.deleteExecution({ id: plan!.id }, { headers: headers() });
      }
    })();
    const ended = await watched.then(
      () => undefined,
      (error: unknown) => ConnectError.from(error),
    );
    expect(seen).toEqual(["running"]);
    expect(ended?.code).toBe(Code.NotFound);
  });

  it("ends with unauthenticated once its key is revoked or its session has ended, while the plan runs on", async () => {
    const console = consoleClient(app.url);
    const session = sessionHeaders(app.url, account.cookie);
    const { secret, apiKey } = await console.createApiKey({ name: "watcher", scopes: ["read"] }, { headers: session });
    const { plan } = await client.createExecution({ goal: "A site for a florist hold@understand" }, { headers: headers() });
    await work.held(plan!.id, "understand");
    /** Watches until the stream ends, calling `end` once the first update is in; what it saw and how it ended. */
    const watchUntilEnded = async (watchHeaders: Record<string, string>, end: () => Promise<unknown>) => {
      const seen: string[] = [];
      const ended = await (async () => {
        for await (const { plan: now } of client.watchExecution({ id: plan!.id }, { headers: watchHeaders })) {
          seen.push(now!.status);
          if (seen.length === 1) await end();
        }
      })().then(
        () => undefined,
        (error: unknown) => ConnectError.from(error),
      );
      return { seen, code: ended?.code };
    };

    const revoked = await watchUntilEnded({ authorization: `Bearer ${secret}` }, () => console.revokeApiKey({ id: apiKey!.id }, { headers: session }));
    expect(revoked).toEqual({ seen: ["running"], code: Code.Unauthenticated });

    const other = await signIn(app.url, account.email, account.password);
    const signedOut = await watchUntilEnded({ cookie: other }, () => console.signOut({}, { headers: sessionHeaders(app.url, other) }));
    expect(signedOut).toEqual({ seen: ["running"], code: Code.Unauthenticated });
    // The plan was not touched: it still waits on its held stage, and the key that made it still reads it.
    expect((await client.getExecution({ id: plan!.id }, { headers: headers() })).plan?.status).toBe("running");
  });

  it("sends a heartbeat without a plan after each quiet heartbeat_seconds when asked, and none otherwise", async () => {
    const { plan } = await client.createExecution({ goal: "A site for a tailor hold@understand" }, { headers: headers() });
    const held = await work.held(plan!.id, "understand");
    /** What a watch saw through 2.5 s of a quiet plan, then as the plan moved on to the gate. */
    const watch = async (heartbeatSeconds: number) => {
      const seen: string[] = [];
      for await (const { plan: now } of client.watchExecution({ id: plan!.id, heartbeatSeconds }, { headers: headers() })) {
        seen.push(now ? now.status : "(heartbeat)");
        if (now?.status === "awaiting_approval") break;
      }
      return seen;
    };
    const beating = watch(1);
    const plain = watch(0);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    held.succeed();
    const [withHeartbeats, without] = await Promise.all([beating, plain]);
    expect(withHeartbeats[0]).toBe("running");
    // One after each quiet second, before the plan moved on.
    expect(withHeartbeats.slice(1, 3)).toEqual(["(heartbeat)", "(heartbeat)"]);
    expect(withHeartbeats.at(-1)).toBe("awaiting_approval");
    expect(without[0]).toBe("running");
    expect(without).not.toContain("(heartbeat)");
    expect(without.at(-1)).toBe("awaiting_approval");
  });

  it("refuses a heartbeat_seconds above 300 as invalid_argument", async () => {
    const { plan } = await client.createExecution({ goal: "A site for a cobbler" }, { headers: headers() });
    const refused = await (async () => {
      for await (const _ of client.watchExecution({ id: plan!.id, heartbeatSeconds: 301 }, { headers: headers() })) void _;
    })().then(
      () => undefined,
      (error: unknown) => ConnectError.from(error),
    );
    expect(refused?.code).toBe(Code.InvalidArgument);
    expect(refused?.rawMessage).toBe("heartbeat_seconds must be at most 300");
  });

  it("refuses another account's plan exactly like a missing one, and callers without credentials", async () => {
    const { plan } = await client.createExecution({ goal: "A site for a running club" }, { headers: headers() });
    const stranger = await createAccountWithKey(app, ["read"]);
    const attempt = async (id: string, h: Record<string, string>) => {
      try {
        for await (const _ of client.watchExecution({ id }, { headers: h })) void _;
        return undefined;
      } catch (error) {
        return ConnectError.from(error);
      }
    };
    const theirs = await attempt(plan!.id, { authorization: `Bearer ${stranger.apiKey}` });
    const missing = await attempt("pln_missing00000000000", { authorization: `Bearer ${stranger.apiKey}` });
    expect(theirs?.code).toBe(Code.NotFound);
    expect(theirs?.rawMessage).toBe(missing?.rawMessage);
    expect((await attempt(plan!.id, {}))?.code).toBe(Code.Unauthenticated);
  });
});
