import fs from "node:fs";

/**
 * Peak resident memory of another process, from /proc. A benchmark resets the
 * peak once its setup is done (Linux's `clear_refs` 5), so the figure is the
 * load it measures, not, say, the scrypt of the sign-ups that made its keys.
 */
export function resetPeakRss(pid: number): void {
  fs.writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

export function peakRssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024;
}
