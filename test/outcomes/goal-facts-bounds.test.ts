import { describe, expect, it } from "vitest";
import { readGoal } from "../../src/outcomes/writers/goal-facts.js";

const BOUND_MS = 250;

/**
 * How long reading `goal` takes: the least of up to three tries, so a pause of the shared machine (another
 * process, a garbage collection) is not taken for the patterns'. A pattern that backtracks is slow every time.
 */
function readingTime(goal: string, language: string): number {
  let least = Number.POSITIVE_INFINITY;
  for (let tries = 0; tries < 3 && least >= BOUND_MS; tries++) {
    const started = performance.now();
    readGoal(goal, language);
    least = Math.min(least, performance.now() - started);
  }
  return least;
}

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
    // Quotation marks of every kind, which open and close names, and what a quoted name holds.
    "\u201C",
    "\u201D",
    "\u00AB",
    "\u00BB",
    "\u2018",
    "\u2019",
    "'a'",
    "\u300C",
    "Dr. ",
    ")",
    "\u3002",
    "named ",
  ];
  const goals: string[] = [];
  for (const a of tokens) {
    for (const b of tokens) goals.push((a + b).repeat(Math.ceil(2000 / (a + b).length)).slice(0, 2000));
  }

  // English is read for everything; any other language only for quoted names and contact details.
  it.each(["en", "fr"])(`${goals.length} goals of 2,000 characters read as %s, each under ${BOUND_MS} ms`, (language) => {
    const slowest = Math.max(...goals.map((goal) => readingTime(goal, language)));
    expect(slowest).toBeLessThan(BOUND_MS);
  });
});
