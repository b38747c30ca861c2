import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Notifier } from "../../src/executions/notifier.js";
import { PLAN_CHANGED_CHANNEL, STAGE_READY_CHANNEL } from "../../src/executions/plan-repository.js";
import { PlanStageStore } from "../../src/executions/plan-stage-store.js";
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

  it("tells this instance's engine of a ready stage at once, and acts on other instances' NOTIFYs but not on its own echo", async () => {
    const here = new Notifier(app.store.db, createLogger("silent"), { sender: "ins_here", stageReadyEveryMs: 0 });
    const elsewhere = new Notifier(app.store.db, createLogger("silent"), { sender: "ins_elsewhere", stageReadyEveryMs: 0 });
    let wakes = 0;
    const stop = await new PlanStageStore(app.store, here).listenForReady(() => wakes++);
    try {
      here.stageReady();
      // Before any NOTIFY could have gone out and come back.
      expect(wakes).toBe(1);
      await here.flush();
      await sleep(150);
      expect(received.filter((n) => n.channel === STAGE_READY_CHANNEL && n.payload === "ins_here").length).toBeGreaterThan(0);
      expect(wakes).toBe(1);
      elsewhere.stageReady();
      await elsewhere.flush();
      await sleep(150);
      expect(wakes).toBe(2);
    } finally {
      await stop();
    }
    // Stopped: neither this notifier nor another instance's reaches it any more.
    here.stageReady();
    elsewhere.stageReady();
    await Promise.all([here.flush(), elsewhere.flush()]);
    await sleep(150);
    expect(wakes).toBe(2);
  });
});
