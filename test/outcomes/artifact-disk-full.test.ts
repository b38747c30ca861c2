import { spawnSync } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { canMountPrivately, onPrivateTmpfs } from "../support/server-process.js";

const root = path.resolve(import.meta.dirname, "../..");

/**
 * The file store on a disk with no room left: its writes say the store is
 * unavailable for a while (so the stage that wrote is tried again later, as
 * when an S3 bucket is away) rather than failing the stage for good, and a
 * claim it made but could not write leaves no empty file naming no one.
 * On a real full file system: a 1 MiB tmpfs of its own (root only).
 */
describe.runIf(canMountPrivately())("the file artifact store on a full disk", () => {
  it("refuses with `unavailable`, and leaves no empty claim behind", async () => {
    const mount = await fs.mkdtemp(path.join(os.tmpdir(), "zero-full-disk-"));
    const script = `
      import fs from "node:fs";
      import { createFileArtifactStore } from ${JSON.stringify(path.join(root, "src/outcomes/artifact-store.ts"))};
      const store = createFileArtifactStore(${JSON.stringify(path.join(mount, "artifacts"))});
      const outcome = async (write) => write.then(() => "written", (error) => ({ type: error.type, message: error.detail?.message, code: error.cause?.code, retryAfter: error.metadata?.get("retry-after") }));
      const big = await outcome(store.put("sites/pln_1/big.bin", new Uint8Array(2 * 1024 * 1024)));
      // Fill what is left, then claim a slug: the claim's file is made but its bytes find no room.
      try { fs.writeFileSync(${JSON.stringify(path.join(mount, "filler"))}, Buffer.alloc(2 * 1024 * 1024)); } catch {}
      const claim = await outcome(store.put("projects/bakery/owner", "pln_1234567890123456789012", { ifAbsent: true }));
      console.log(JSON.stringify({ big, claim, claimLeft: fs.existsSync(${JSON.stringify(path.join(mount, "artifacts/projects/bakery/owner"))}) }));
    `;
    const [program, ...args] = onPrivateTmpfs(mount, "size=1m", [process.execPath, "--import", "tsx", "--input-type=module", "-e", script]);
    const child = spawnSync(program!, args, { cwd: root, encoding: "utf8" });
    await fs.rm(mount, { recursive: true, force: true });
    expect(child.status, child.stderr).toBe(0);
    const seen = JSON.parse(child.stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
    // A wait of half a minute, for someone to make room; the store's path is the operator's to see (in the log), not the client's.
    expect(seen.big).toEqual({ type: "unavailable", message: "the artifact store's disk is full", code: "ENOSPC", retryAfter: "30" });
    expect(seen.claim).toMatchObject({ type: "unavailable", code: "ENOSPC" });
    expect(seen.claimLeft).toBe(false);
  });
});
