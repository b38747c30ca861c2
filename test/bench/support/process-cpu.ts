import { execFileSync } from "node:child_process";
import fs from "node:fs";

/** Clock ticks per second, the unit of /proc/<pid>/stat's CPU times (100 on Linux unless configured otherwise). */
const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

/**
 * CPU time (user + system) another process has used so far, in microseconds,
 * from /proc. Its resolution is one clock tick (10 ms), so read it over
 * thousands of requests, not one.
 */
export function processCpuMicros(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name, which sits in parentheses and may hold spaces: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_SECOND;
}
