import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { startFailure } from "../../src/server/start-failure.js";

/** What the system throws for a file that is not there. */
const missing = (file: string) => fs.open(file).catch((error: unknown) => error);

describe("the one line a failed start prints", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-start-failure-"));
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it("names the variable of the innermost directory given that holds the file, one inside the other either way", async () => {
    const dataDir = path.join(dir, "data");
    const artifactsInData = loadConfig({ ZERO_DATA_DIR: dataDir, ZERO_ARTIFACTS: `file:${path.join(dataDir, "sites")}` });
    const inArtifacts = path.join(dataDir, "sites", "index.html");
    const inData = path.join(dataDir, "postgres.password");
    expect(startFailure(await missing(inArtifacts), artifactsInData)).toBe(`ZERO_ARTIFACTS: cannot open ${inArtifacts}: no such file or directory (ENOENT)`);
    expect(startFailure(await missing(inData), artifactsInData)).toBe(`ZERO_DATA_DIR: cannot open ${inData}: no such file or directory (ENOENT)`);

    const dataInArtifacts = loadConfig({ ZERO_DATA_DIR: path.join(dir, "data"), ZERO_ARTIFACTS: `file:${dir}` });
    const beside = path.join(dir, "index.html");
    expect(startFailure(await missing(inData), dataInArtifacts)).toBe(`ZERO_DATA_DIR: cannot open ${inData}: no such file or directory (ENOENT)`);
    expect(startFailure(await missing(beside), dataInArtifacts)).toBe(`ZERO_ARTIFACTS: cannot open ${beside}: no such file or directory (ENOENT)`);
  });
});
