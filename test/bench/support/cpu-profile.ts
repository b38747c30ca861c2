import fs from "node:fs";
import path from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

/**
 * The functions that took the most CPU in a V8 `.cpuprofile` (as written by
 * `node --cpu-prof`), by self time, as printable lines: where a process spends
 * its time, without opening a profiler UI.
 */
export function topSelfTime(file: string, count = 25): string[] {
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as { nodes: ProfileNode[]; samples: number[] };
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const hits = new Map<string, number>();
  for (const id of profile.samples) {
    const { functionName, url, lineNumber } = byNode.get(id)!.callFrame;
    const where = url ? `${path.basename(url)}:${lineNumber + 1}` : "";
    const key = `${functionName || "(anonymous)"} ${where}`.trim();
    hits.set(key, (hits.get(key) ?? 0) + 1);
  }
  const total = profile.samples.length;
  return [...hits.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([key, n]) => `${((n / total) * 100).toFixed(1).padStart(5)}%  ${key}`);
}

/** The newest `.cpuprofile` in `dir` whose name carries `pid` (Node names them CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile). */
export function profileOf(dir: string, pid: number): string | undefined {
  const mine = fs.readdirSync(dir).filter((name) => name.endsWith(".cpuprofile") && name.includes(`.${pid}.`));
  return mine.length === 0 ? undefined : path.join(dir, mine.sort().at(-1)!);
}
