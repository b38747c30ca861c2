import fs from "node:fs/promises";
import http2 from "node:http2";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent, request } from "undici";
import { openStore } from "../../src/db/database.js";
import { createLogger } from "../../src/observability/logger.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { createTestDatabase, onRealPostgres } from "../support/database.js";
import { selfSignedCertificate } from "../support/tls.js";

describe("optional TLS with ALPN", () => {
  let app: TestApp;
  let certificate: Awaited<ReturnType<typeof selfSignedCertificate>>;
  beforeAll(async () => {
    certificate = await selfSignedCertificate();
    app = await startTestApp({ env: certificate.env });
  });
  afterAll(async () => {
    await app.close();
    await certificate.remove();
  });

  it("speaks HTTP/1.1 over TLS", async () => {
    expect(app.url).toMatch(/^https:/);
    const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
    const res = await request(`${app.url}/api/capabilities`, { dispatcher });
    expect(res.statusCode).toBe(200);
    expect(((await res.body.json()) as { service: string }).service).toBe("project-zero");
    await dispatcher.close();
  });

  it("negotiates h2 by ALPN on the same port", async () => {
    const session = http2.connect(app.url, { rejectUnauthorized: false });
    try {
      const body = await new Promise<string>((resolve, reject) => {
        const req = session.request({ ":path": "/api/capabilities" });
        let text = "";
        req.setEncoding("utf8");
        req.on("data", (d: string) => (text += d));
        req.on("end", () => resolve(text));
        req.on("error", reject);
      });
      expect(session.alpnProtocol).toBe("h2");
      expect(JSON.parse(body).service).toBe("project-zero");
    } finally {
      session.close();
    }
  });
});

describe.runIf(onRealPostgres)("migrations on a shared Postgres", () => {
  it("several instances starting together apply them once, under the lock", async () => {
    const url = (await createTestDatabase())!;
    const logger = createLogger("silent");
    const dirs = await Promise.all([0, 1, 2].map(() => fs.mkdtemp(path.join(os.tmpdir(), "zero-mig-"))));
    const stores = await Promise.all(dirs.map((dataDir) => openStore({ databaseUrl: url, dataDir, logger })));
    try {
      const rows = await stores[0]!.db
        .selectFrom("kysely_migration" as never)
        .select("name" as never)
        .execute();
      const names = rows.map((r) => (r as { name: string }).name);
      expect(new Set(names).size).toBe(names.length);
      expect(names.length).toBeGreaterThan(0);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
