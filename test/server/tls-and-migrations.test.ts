import fs from "node:fs/promises";
import http2 from "node:http2";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent, request } from "undici";
import { sql } from "kysely";
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

  it("takes a signed-in browser's writes over h2, where the authority is `:authority` and there is no Host, and still refuses another origin", async () => {
    const origin = new URL(app.url).origin;
    const session = http2.connect(app.url, { rejectUnauthorized: false });
    try {
      const signUp = await h2Post(session, "/zero.v1.ConsoleService/SignUp", { origin }, { email: "h2@example.test", password: "password long" });
      expect(signUp.status).toBe(200);
      const cookie = String(signUp.headers["set-cookie"]).split(";")[0]!;
      const key = await h2Post(session, "/zero.v1.ConsoleService/CreateApiKey", { origin, cookie }, { name: "h2", scopes: ["read"] });
      expect(key.status).toBe(200);
      const created = await h2Post(session, "/api/execution", { origin, cookie }, { goal: "A website for a bakery in Lyon" });
      expect(created.status).toBe(202);
      const foreign = await h2Post(session, "/api/execution", { origin: "https://evil.example", cookie }, { goal: "A website for a bakery in Lyon" });
      expect(foreign.status).toBe(403);
      expect(JSON.parse(foreign.body).error.type).toBe("permission_denied");
    } finally {
      session.close();
    }
  });

  it("gives https public URLs when it serves TLS and no ZERO_PUBLIC_URL is set", () => {
    expect(app.config.publicUrl).toBe(new URL(app.url).origin);
  });
});

function h2Post(
  session: http2.ClientHttp2Session,
  path: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/json", ...headers });
    let status = 0;
    let responseHeaders: http2.IncomingHttpHeaders = {};
    let text = "";
    req.on("response", (h) => {
      status = Number(h[":status"]);
      responseHeaders = h;
    });
    req.setEncoding("utf8");
    req.on("data", (d: string) => (text += d));
    req.on("end", () => resolve({ status, headers: responseHeaders, body: text }));
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

describe("migrations applied by a newer version", () => {
  it("an older version still starts on the database a newer one migrated (a rollback, or an old instance restarting mid-rollout)", async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-mig-newer-"));
    const databaseUrl = await createTestDatabase();
    const logger = createLogger("silent");
    const options = { databaseUrl, dataDir, logger, embedded: "pglite" as const };
    try {
      const first = await openStore(options);
      // What a newer version leaves behind: a migration this code does not know, already applied, recorded as
      // Kysely records one (after the latest, which can be ahead of the clock: Kysely keeps them 1 ms apart).
      const { rows: latest } = await sql<{ at: string }>`select max(timestamp) as at from kysely_migration`.execute(first.db);
      const after = new Date(Math.max(Date.now(), new Date(latest[0]!.at).getTime() + 1)).toISOString();
      await sql`insert into kysely_migration (name, timestamp) values ('2999-01-01T00-00_from-a-newer-version', ${after})`.execute(first.db);
      await first.close();
      const again = await openStore(options);
      try {
        const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(again.db);
        expect(rows.at(-1)?.name).toBe("2999-01-01T00-00_from-a-newer-version");
        await again.ping(5000);
      } finally {
        await again.close();
      }
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
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
