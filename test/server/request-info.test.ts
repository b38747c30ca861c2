import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/observability/logger.js";
import { RepeatingFailure } from "../../src/observability/repeating-failure.js";
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
