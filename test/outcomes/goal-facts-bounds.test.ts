import { describe, expect, it } from "vitest";
import { readGoal } from "../../src/outcomes/writers/goal-facts.js";

/**
 * readGoal's patterns are polynomial on adversarial text (the ReDoS check
 * lists them); they are safe only because a goal is at most 2,000 code
 * points. This holds that: goals built to make them backtrack, at the
 * longest a goal may be, are read in far less time than a stall of the
 * event loop would take. A real ReDoS on this input takes seconds or more.
 */
describe("reading the longest adversarial goals stays far from a stall", () => {
  const tokens = [
    "for ",
    "a ",
    "with ",
    "A",
    "Ab ",
    ",",
    " and ",
    "called ",
    '"',
    "'",
    "in ",
    "Paris ",
    "sells ",
    "x",
    " ",
    "the ",
    "website ",
    "simple ",
    "-",
    "&",
    "0",
    "+1",
    "@",
    ".",
    "a.",
    "aimed at ",
    "de ",
    "\u00d1",
  ];
  const goals: string[] = [];
  for (const a of tokens) {
    for (const b of tokens) goals.push((a + b).repeat(Math.ceil(2000 / (a + b).length)).slice(0, 2000));
  }

  it(`${goals.length} goals of 2,000 characters, each under 250 ms`, () => {
    let slowest = 0;
    for (const goal of goals) {
      const started = performance.now();
      readGoal(goal);
      slowest = Math.max(slowest, performance.now() - started);
    }
    expect(slowest).toBeLessThan(250);
  });
});
