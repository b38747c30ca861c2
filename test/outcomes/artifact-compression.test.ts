import { deflateRawSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { decodedBody, rawRequest, varyTokens, type RawAnswer } from "../support/raw-request.js";
import { recordPlanFor } from "./support/recorded-plans.js";

// Published sites, previews and books travel compressed when the file is text
// a client may take compressed, and exactly as stored otherwise.

const paragraph = "<p>Fresh bread every morning from six, croissants until they run out, and cakes to order.</p>\n";
const TEXT_FILES: Record<string, { body: string; contentType: string }> = {
  "index.html": {
    body: `<!DOCTYPE html><html lang="en"><head><title>Bakery</title></head><body>${paragraph.repeat(40)}</body></html>`,
    contentType: "text/html; charset=utf-8",
  },
  "style.css": { body: "body { margin: 0 auto; max-width: 40rem; }\n".repeat(60), contentType: "text/css; charset=utf-8" },
  "hero.svg": {
    body: `<svg xmlns="http://www.w3.org/2000/svg">${'<circle cx="10" cy="10" r="5" fill="#abcdef"/>'.repeat(50)}</svg>`,
    contentType: "image/svg+xml",
  },
  "sitemap.xml": {
    body: `<?xml version="1.0" encoding="UTF-8"?><urlset>${"<url><loc>https://example.test/sites/bakery/</loc></url>".repeat(40)}</urlset>`,
    contentType: "application/xml",
  },
  "robots.txt": { body: "User-agent: *\nAllow: /\n".repeat(80), contentType: "text/plain; charset=utf-8" },
  "data.json": { body: JSON.stringify({ items: Array.from({ length: 80 }, (_, i) => ({ name: `item ${i}`, price: i })) }), contentType: "application/json" },
  "chapter.xhtml": {
    body: `<html xmlns="http://www.w3.org/1999/xhtml"><body>${paragraph.repeat(30)}</body></html>`,
    contentType: "application/xhtml+xml; charset=utf-8",
  },
};
/** Already compressed, or too small for compression to pay. */
const AS_STORED: Record<string, Uint8Array> = {
  "small.html": new TextEncoder().encode("<!DOCTYPE html><title>Tiny</title><p>Hello.</p>"),
  "book.epub": Buffer.concat([Buffer.from("PK\u0003\u0004"), deflateRawSync(Buffer.from(paragraph.repeat(60)))]),
  "photo.png": Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47]), Buffer.alloc(4000, 7)]),
};

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
  await recordPlanFor(app, "pln_gzipsite", { slug: "crusty-bakery" });
  await recordPlanFor(app, "pln_gzipbook", { slug: "crusty-book", mount: "books" });
  for (const base of ["sites/crusty-bakery/", "preview/pln_gzipsite/", "books/crusty-book/"]) {
    for (const [name, file] of Object.entries(TEXT_FILES)) await app.artifacts.put(base + name, file.body);
    for (const [name, body] of Object.entries(AS_STORED)) await app.artifacts.put(base + name, body);
  }
});
afterAll(() => app?.close());

const MOUNTS = ["/sites/crusty-bakery/", "/preview/pln_gzipsite/", "/books/crusty-book/"];
const get = (path: string, headers: Record<string, string> = {}, method = "GET") => rawRequest(app.url, path, { method, headers });

function expectSameHeaders(head: RawAnswer, get: RawAnswer, path: string): void {
  for (const name of ["content-encoding", "content-length", "content-type", "etag", "vary", "cache-control"]) {
    expect(head.headers[name], `${path} ${name}`).toBe(get.headers[name]);
  }
}

describe("a text file of a site, preview or book", () => {
  it("is sent with the coding the client prefers, its own ETag and length, and decodes to the stored bytes", async () => {
    for (const mount of MOUNTS) {
      for (const [name, file] of Object.entries(TEXT_FILES)) {
        const path = mount + name;
        const plain = await get(path);
        expect(plain.status, path).toBe(200);
        expect(plain.headers["content-type"], path).toBe(file.contentType);
        expect(plain.headers["content-encoding"], path).toBeUndefined();
        expect(plain.body.toString("utf8"), path).toBe(file.body);
        expect(varyTokens(plain), path).toContain("accept-encoding");
        for (const [accept, coding] of [
          ["gzip, deflate, br", "br"],
          ["gzip", "gzip"],
          ["br;q=0, gzip;q=0.8", "gzip"],
          ["br;q=0, gzip;q=0", undefined],
        ] as const) {
          const answer = await get(path, { "accept-encoding": accept });
          expect(answer.status, `${path} ${accept}`).toBe(200);
          expect(answer.headers["content-encoding"], `${path} ${accept}`).toBe(coding);
          expect(answer.headers["content-type"], `${path} ${accept}`).toBe(file.contentType);
          expect(varyTokens(answer), `${path} ${accept}`).toContain("accept-encoding");
          expect(Number(answer.headers["content-length"]), `${path} ${accept}`).toBe(answer.body.length);
          expect(decodedBody(answer).toString("utf8"), `${path} ${accept}`).toBe(file.body);
          expect(answer.headers.etag, `${path} ${accept}`).toBe(coding ? plain.headers.etag!.replace(/"$/, `-${coding}"`) : plain.headers.etag);
          if (coding) expect(answer.body.length, `${path} ${accept}`).toBeLessThan(file.body.length / 2);
          const head = await get(path, { "accept-encoding": accept }, "HEAD");
          expect(head.body.length, path).toBe(0);
          expectSameHeaders(head, answer, `HEAD ${path} ${accept}`);
        }
      }
    }
  });

  it("answers 304 to the ETag of the coding that would be sent, strong or weak, alone or in a list", async () => {
    const path = "/sites/crusty-bakery/index.html";
    const br = await get(path, { "accept-encoding": "br" });
    const gzip = await get(path, { "accept-encoding": "gzip" });
    for (const ifNoneMatch of [br.headers.etag!, `W/${br.headers.etag}`, `"stale", ${br.headers.etag}`, `${gzip.headers.etag}, ${br.headers.etag}`, "*"]) {
      const answer = await get(path, { "accept-encoding": "br", "if-none-match": ifNoneMatch });
      expect(answer.status, ifNoneMatch).toBe(304);
      expect(answer.body.length).toBe(0);
      expect(answer.headers.etag).toBe(br.headers.etag);
      expect(varyTokens(answer)).toContain("accept-encoding");
      expect(answer.headers["cache-control"]).toBe("public, max-age=60");
    }
    // The gzip copy is not what a br-only client would be sent, nor the identity bytes.
    expect((await get(path, { "accept-encoding": "br", "if-none-match": gzip.headers.etag! })).status).toBe(200);
    expect((await get(path, { "if-none-match": br.headers.etag! })).status).toBe(200);
    expect((await get(path, { "accept-encoding": "gzip", "if-none-match": `W/${gzip.headers.etag}` })).status).toBe(304);
    // A republished page is a new representation under every coding.
    await app.artifacts.put("sites/crusty-bakery/index.html", `${TEXT_FILES["index.html"]!.body}<!-- changed -->`);
    const changed = await get(path, { "accept-encoding": "br", "if-none-match": br.headers.etag! });
    expect(changed.status).toBe(200);
    expect(decodedBody(changed).toString("utf8")).toContain("<!-- changed -->");
    await app.artifacts.put("sites/crusty-bakery/index.html", TEXT_FILES["index.html"]!.body);
  });
});

describe("a file that is already compressed, or small", () => {
  it("is sent as stored, whatever the client accepts", async () => {
    for (const mount of MOUNTS) {
      for (const [name, body] of Object.entries(AS_STORED)) {
        const path = mount + name;
        const answer = await get(path, { "accept-encoding": "gzip, deflate, br" });
        expect(answer.status, path).toBe(200);
        expect(answer.headers["content-encoding"], path).toBeUndefined();
        expect(answer.body.equals(Buffer.from(body)), path).toBe(true);
        expect(Number(answer.headers["content-length"]), path).toBe(body.length);
      }
    }
  });
});
