import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { decodedBody, rawRequest, varyTokens } from "../support/raw-request.js";

// How the Console's script and stylesheet travel: compressed as the browser accepts,
// revalidated by ETag, and still found while two versions run behind one balancer.

let app: TestApp;
let scriptPath: string;
let stylePath: string;

beforeAll(async () => {
  app = await startTestApp();
  const page = (await rawRequest(app.url, "/console/")).body.toString("utf8");
  scriptPath = /src="(\/console\/assets\/console-[\w-]{12}\.js)"/.exec(page)![1]!;
  stylePath = /href="(\/console\/assets\/console-[\w-]{12}\.css)"/.exec(page)![1]!;
});
afterAll(() => app?.close());

const get = (path: string, headers: Record<string, string> = {}, method = "GET") => rawRequest(app.url, path, { method, headers });

describe("the Console's script and stylesheet", () => {
  it("are sent compressed as the client accepts (br first, then gzip), with the same bytes once decoded", async () => {
    for (const path of [scriptPath, stylePath]) {
      const plain = await get(path);
      expect(plain.status).toBe(200);
      expect(plain.headers["content-encoding"], path).toBeUndefined();
      expect(varyTokens(plain), path).toContain("accept-encoding");
      expect(Number(plain.headers["content-length"])).toBe(plain.body.length);

      for (const [accept, coding] of [
        ["gzip, deflate, br", "br"],
        ["br", "br"],
        ["*", "br"],
        ["gzip, deflate", "gzip"],
        ["br;q=0, gzip", "gzip"],
        ["br;q=0.5, gzip;q=1.0", "gzip"],
        ["gzip;q=0, br;q=0", undefined],
        ["identity", undefined],
        ["deflate", undefined],
      ] as const) {
        const answer = await get(path, { "accept-encoding": accept });
        expect(answer.status, `${path} ${accept}`).toBe(200);
        expect(answer.headers["content-encoding"], `${path} ${accept}`).toBe(coding);
        expect(varyTokens(answer), `${path} ${accept}`).toContain("accept-encoding");
        expect(Number(answer.headers["content-length"]), `${path} ${accept}`).toBe(answer.body.length);
        expect(decodedBody(answer).equals(plain.body), `${path} ${accept}`).toBe(true);
        if (coding) expect(answer.body.length, `${path} ${accept}`).toBeLessThan(plain.body.length / 2);
      }
    }
  });

  it("name each coding by its own ETag, answer 304 only to the ETag of what would be sent, and answer HEAD with GET's headers", async () => {
    const plain = await get(scriptPath);
    const br = await get(scriptPath, { "accept-encoding": "br" });
    const gzip = await get(scriptPath, { "accept-encoding": "gzip" });
    const etags = [plain, br, gzip].map((answer) => answer.headers.etag!);
    expect(new Set(etags).size).toBe(3);
    expect(br.headers.etag).toMatch(/^"[\w-]+-br"$/);
    expect(gzip.headers.etag).toMatch(/^"[\w-]+-gzip"$/);

    const revalidated = await get(scriptPath, { "accept-encoding": "br", "if-none-match": br.headers.etag! });
    expect(revalidated.status).toBe(304);
    expect(revalidated.body.length).toBe(0);
    expect(revalidated.headers.etag).toBe(br.headers.etag);
    expect(varyTokens(revalidated)).toContain("accept-encoding");
    // A cache holding the gzip copy, asking for br only, has not got what would be sent.
    expect((await get(scriptPath, { "accept-encoding": "br", "if-none-match": gzip.headers.etag! })).status).toBe(200);
    expect((await get(scriptPath, { "if-none-match": br.headers.etag! })).status).toBe(200);

    const head = await get(scriptPath, { "accept-encoding": "br" }, "HEAD");
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    for (const name of ["content-encoding", "content-length", "content-type", "etag", "vary", "cache-control"]) {
      expect(head.headers[name], name).toBe(br.headers[name]);
    }
  });

  it("answer 304 to a weak validator, a list and `*`, as RFC 9110's weak comparison asks", async () => {
    const etag = (await get(stylePath)).headers.etag!;
    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, `"other",W/${etag}`, "*"]) {
      expect((await get(stylePath, { "if-none-match": ifNoneMatch })).status, ifNoneMatch).toBe(304);
    }
    expect((await get(stylePath, { "if-none-match": '"other"' })).status).toBe(200);
  });
});

describe("another version's asset names, during a rolling upgrade", () => {
  it("get this instance's script or stylesheet, to be revalidated rather than kept for good", async () => {
    for (const [other, ours, contentType] of [
      ["/console/assets/console-AAAAAAAAAAAA.js", scriptPath, "text/javascript; charset=utf-8"],
      ["/console/assets/console-b-b-b-b-b-b-.css", stylePath, "text/css; charset=utf-8"],
    ] as const) {
      const answer = await get(other, { "accept-encoding": "br" });
      expect(answer.status, other).toBe(200);
      expect(answer.headers["content-type"], other).toBe(contentType);
      expect(answer.headers["cache-control"], other).toBe("no-cache");
      expect(answer.headers["content-security-policy"], other).toContain("default-src 'none'");
      const current = await get(ours, { "accept-encoding": "br" });
      expect(decodedBody(answer).equals(decodedBody(current)), other).toBe(true);
      expect(current.headers["cache-control"]).toContain("immutable");
    }
  });

  it("leave any other unknown asset a 404", async () => {
    for (const path of [
      "/console/assets/other.js",
      "/console/assets/console-short.js",
      "/console/assets/console-AAAAAAAAAAAA.map",
      "/console/assets/x/console-AAAAAAAAAAAA.js",
    ]) {
      const answer = await get(path);
      expect(answer.status, path).toBe(404);
      expect(answer.headers["content-type"], path).toContain("application/json");
    }
  });
});
