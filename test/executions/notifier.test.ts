import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Notifier } from "../../src/executions/notifier.js";
import { PLAN_CHANGED_CHANNEL, STAGE_READY_CHANNEL } from "../../src/executions/plan-repository.js";
import { PlanStageStore } from "../../src/executions/plan-stage-store.js";
import { createLogger } from "../../src/observability/logger.js";
import { startTestApp, type TestApp } from "../support/app.js";

const tick = () => new Promise((resolve) => setImmediate(resolve));
/** Until `check` passes: a NOTIFY comes back on the listener's own connection, later under load. */
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 10_000, interval: 20 });

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
    const notifier = new Notifier(app.store.db, createLogger("silent"), { stageReadyEveryMs: 2000 });
    const started = performance.now();
    // Ten creates, each in its own tick, well within one interval.
    for (let i = 0; i < 10; i++) {
      notifier.stageReady();
      await tick();
    }
    const stageReady = () => received.filter((n) => n.channel === STAGE_READY_CHANNEL);
    await eventually(() => expect(stageReady().length).toBeGreaterThan(0));
    if (performance.now() - started < 2000) expect(stageReady()).toHaveLength(1);
    // The trailing one, so a stage made ready after the first is announced too.
    await eventually(() => expect(stageReady()).toHaveLength(2));
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
    await eventually(() => {
      expect(
        received
          .filter((n) => n.channel === PLAN_CHANGED_CHANNEL)
          .map((n) => n.payload)
          .sort(),
      ).toEqual(["pln_a", "pln_b", "pln_c"]);
      expect(received.filter((n) => n.channel === STAGE_READY_CHANNEL)).toHaveLength(2);
    });
  });

  it("tells this instance's engine of a ready stage at once, and acts on other instances' NOTIFYs but not on its own echo", async () => {
    const here = new Notifier(app.store.db, createLogger("silent"), { sender: "ins_here", stageReadyEveryMs: 0 });
    const elsewhere = new Notifier(app.store.db, createLogger("silent"), { sender: "ins_elsewhere", stageReadyEveryMs: 0 });
    let wakes = 0;
    received.length = 0;
    const heard = (sender: string) => received.filter((n) => n.channel === STAGE_READY_CHANNEL && n.payload === sender).length;
    const stop = await new PlanStageStore(app.store, here).listenForReady(() => wakes++);
    try {
      here.stageReady();
      // Before any NOTIFY could have gone out and come back.
      expect(wakes).toBe(1);
      await here.flush();
      // The echo has come back (the same listener connection delivers it to both): it woke nothing.
      await eventually(() => expect(heard("ins_here")).toBe(1));
      expect(wakes).toBe(1);
      elsewhere.stageReady();
      await elsewhere.flush();
      await eventually(() => expect(wakes).toBe(2));
    } finally {
      await stop();
    }
    // Stopped: neither this notifier nor another instance's reaches it any more.
    here.stageReady();
    elsewhere.stageReady();
    await Promise.all([here.flush(), elsewhere.flush()]);
    await eventually(() => expect([heard("ins_here"), heard("ins_elsewhere")]).toEqual([2, 2]));
    expect(wakes).toBe(2);
  });
});
