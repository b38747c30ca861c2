import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Notifier } from "../../src/executions/notifier.js";
import { PLAN_CHANGED_CHANNEL, STAGE_READY_CHANNEL } from "../../src/executions/plan-repository.js";
import { createLogger } from "../../src/observability/logger.js";
import { startTestApp, type TestApp } from "../support/app.js";

const tick = () => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the engine's notifications", () => {
  let app: TestApp;
  const received: { channel: string; payload: string }[] = [];
  const unlisten: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    app = await startTestApp({ env: { ZERO_WORKER_CONCURRENCY: "0" } });
    for (const channel of [STAGE_READY_CHANNEL, PLAN_CHANGED_CHANNEL]) {
      unlisten.push(await app.store.listen(channel, (payload) => received.push({ channel, payload })));
    }
  });
  afterAll(async () => {
    for (const stop of unlisten) await stop();
    await app.close();
  });

  it("sends 'a stage is ready' at most once per interval, the last one trailing", async () => {
    received.length = 0;
    const notifier = new Notifier(app.store.db, createLogger("silent"), { stageReadyEveryMs: 300 });
    // Ten creates, each in its own tick, well within one interval.
    for (let i = 0; i < 10; i++) {
      notifier.stageReady();
      await tick();
    }
    await sleep(150);
    expect(received.filter((n) => n.channel === STAGE_READY_CHANNEL)).toHaveLength(1);
    await sleep(400);
    // The trailing one, so a stage made ready after the first is announced too.
    expect(received.filter((n) => n.channel === STAGE_READY_CHANNEL)).toHaveLength(2);
  });

  it("sends every changed plan, and flush sends a held-back 'stage ready' at once", async () => {
    received.length = 0;
    const notifier = new Notifier(app.store.db, createLogger("silent"), { stageReadyEveryMs: 60_000 });
    notifier.stageReady();
    await notifier.flush();
    notifier.stageReady();
    for (const id of ["pln_a", "pln_b", "pln_c"]) {
      notifier.planChanged(id);
      await tick();
    }
    await notifier.flush();
    await sleep(100);
    expect(
      received
        .filter((n) => n.channel === PLAN_CHANGED_CHANNEL)
        .map((n) => n.payload)
        .sort(),
    ).toEqual(["pln_a", "pln_b", "pln_c"]);
    expect(received.filter((n) => n.channel === STAGE_READY_CHANNEL)).toHaveLength(2);
  });
});
