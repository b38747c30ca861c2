import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { rawRequest, varyTokens, type RawAnswer } from "../support/raw-request.js";
import { recordPlanFor } from "./support/recorded-plans.js";

// A reader's interrupted EPUB download resumes, and a player or download
// manager that asks for part of a file gets that part (RFC 9110 byte ranges).

const paragraph = "<p>Fresh bread every morning from six, croissants until they run out, and cakes to order.</p>\n";
const PAGE = Buffer.from(`<!DOCTYPE html><html lang="en"><head><title>Bakery</title></head><body>${paragraph.repeat(40)}</body></html>`);
// Long enough that a download stops partway: a zip of pictures, bytes that do not repeat.
const EPUB = Buffer.concat([Buffer.from("PK\u0003\u0004"), Buffer.from(Array.from({ length: 6000 }, (_, i) => (i * 7919 + (i >> 8)) & 0xff))]);
const FILES: Record<string, Buffer> = { "index.html": PAGE, "ranged-book.epub": EPUB };

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
  await recordPlanFor(app, "pln_rangesite", { slug: "ranged-bakery" });
  await recordPlanFor(app, "pln_rangebook", { slug: "ranged-book", mount: "books" });
  for (const base of ["sites/ranged-bakery/", "preview/pln_rangesite/", "books/ranged-book/"]) {
    for (const [name, body] of Object.entries(FILES)) await app.artifacts.put(base + name, body);
  }
});
afterAll(() => app?.close());

const MOUNTS = ["/sites/ranged-bakery/", "/preview/pln_rangesite/", "/books/ranged-book/"];
const EPUB_PATH = "/books/ranged-book/ranged-book.epub";
const get = (path: string, headers: Record<string, string> = {}, method = "GET") => rawRequest(app.url, path, { method, headers });

/** The headers a part shares with the whole file's answer. */
const SHARED_HEADERS = ["etag", "content-type", "cache-control", "content-security-policy", "x-content-type-options", "referrer-policy", "content-disposition"];

function expectWhole(answer: RawAnswer, body: Buffer, label: string): void {
  expect(answer.status, label).toBe(200);
  expect(answer.headers["content-range"], label).toBeUndefined();
  expect(answer.headers["accept-ranges"], label).toBe("bytes");
  expect(answer.headers["content-encoding"], label).toBeUndefined();
  expect(answer.body.equals(body), label).toBe(true);
}

describe("a file of a site, preview or book asked for in part", () => {
  it("says it takes byte ranges, and answers each form of one range with 206, the part and the whole file's headers", async () => {
    for (const mount of MOUNTS) {
      for (const [name, body] of Object.entries(FILES)) {
        const path = mount + name;
        const whole = await get(path);
        expectWhole(whole, body, path);
        const length = body.length;
        for (const [range, start, end] of [
          ["bytes=0-99", 0, 99],
          ["bytes=100-", 100, length - 1],
          ["bytes=-50", length - 50, length - 1],
          ["bytes=10-10", 10, 10],
          // Past the end is cut at the end; a suffix longer than the file is the whole file.
          [`bytes=${length - 5}-${length + 1000}`, length - 5, length - 1],
          [`bytes=-${length + 1000}`, 0, length - 1],
          ["Bytes=3-7", 3, 7],
        ] as const) {
          const label = `${path} ${range}`;
          const part = await get(path, { range });
          expect(part.status, label).toBe(206);
          expect(part.headers["content-range"], label).toBe(`bytes ${start}-${end}/${length}`);
          expect(Number(part.headers["content-length"]), label).toBe(end - start + 1);
          expect(part.body.equals(body.subarray(start, end + 1)), label).toBe(true);
          expect(part.headers["accept-ranges"], label).toBe("bytes");
          expect(part.headers["content-encoding"], label).toBeUndefined();
          for (const header of SHARED_HEADERS) expect(part.headers[header], `${label} ${header}`).toBe(whole.headers[header]);
        }
      }
    }
  });

  it("resumes the EPUB download where it stopped", async () => {
    const whole = await get(EPUB_PATH);
    const rest = await get(EPUB_PATH, { range: "bytes=1000-", "if-range": whole.headers.etag! });
    expect(rest.status).toBe(206);
    expect(Buffer.concat([whole.body.subarray(0, 1000), rest.body]).equals(EPUB)).toBe(true);
    expect(rest.headers["content-disposition"]).toBe(whole.headers["content-disposition"]);
  });

  it("sends a part of the bytes as stored to a client that takes compressed answers, never a part of a compressed copy", async () => {
    for (const mount of MOUNTS) {
      const path = `${mount}index.html`;
      const whole = await get(path);
      for (const acceptEncoding of ["br", "gzip", "gzip, deflate, br"]) {
        const label = `${path} ${acceptEncoding}`;
        const part = await get(path, { range: "bytes=0-99", "accept-encoding": acceptEncoding });
        expect(part.status, label).toBe(206);
        expect(part.headers["content-encoding"], label).toBeUndefined();
        expect(part.headers["content-range"], label).toBe(`bytes 0-99/${PAGE.length}`);
        expect(part.body.equals(PAGE.subarray(0, 100)), label).toBe(true);
        expect(part.headers.etag, label).toBe(whole.headers.etag);
        // The whole file's answer to the same address still depends on Accept-Encoding.
        expect(varyTokens(part), label).toContain("accept-encoding");
      }
    }
  });

  it("answers a range that starts past the end with 416 and the file's length, as a 404 is answered", async () => {
    for (const mount of MOUNTS) {
      for (const [name, body] of Object.entries(FILES)) {
        const path = mount + name;
        for (const range of [`bytes=${body.length}-`, `bytes=${body.length + 10}-${body.length + 20}`, "bytes=-0"]) {
          const label = `${path} ${range}`;
          const page = await get(path, { range });
          expect(page.status, label).toBe(416);
          expect(page.headers["content-range"], label).toBe(`bytes */${body.length}`);
          expect(page.headers["content-type"], label).toBe("text/html; charset=utf-8");
          expect(page.headers["cache-control"], label).toBe("no-store");
          expect(page.headers["content-disposition"], label).toBeUndefined();
          expect(page.headers.etag, label).toBeUndefined();
          expect(page.headers["content-security-policy"], label).toContain("sandbox");
          expect(Number(page.headers["content-length"]), label).toBe(page.body.length);
          expect(page.body.toString("utf8"), label).toContain("<!DOCTYPE html>");
          const json = await get(path, { range, accept: "application/json" });
          expect(json.status, label).toBe(416);
          expect(json.headers["content-range"], label).toBe(`bytes */${body.length}`);
          expect(json.headers["content-type"], label).toContain("application/json");
          expect(JSON.parse(json.body.toString("utf8")), label).toMatchObject({ error: { type: "invalid_request" } });
          expect(varyTokens(json), label).toContain("accept");
        }
      }
    }
  });

  it("honours If-Range only with the file's own strong ETag; another validator gets the whole file", async () => {
    const path = "/sites/ranged-bakery/index.html";
    const whole = await get(path);
    const br = await get(path, { "accept-encoding": "br" });
    const matching = await get(path, { range: "bytes=0-9", "if-range": whole.headers.etag! });
    expect(matching.status).toBe(206);
    expect(matching.body.equals(PAGE.subarray(0, 10))).toBe(true);
    for (const ifRange of [
      '"stale"',
      `W/${whole.headers.etag}`,
      br.headers.etag!,
      "Tue, 15 Nov 1994 08:12:31 GMT",
      new Date(Date.now() + 86_400_000).toUTCString(),
    ]) {
      expectWhole(await get(path, { range: "bytes=0-9", "if-range": ifRange }), PAGE, ifRange);
      // Nor does another validator make a range past the end unsatisfiable: the whole file is sent.
      expectWhole(await get(path, { range: `bytes=${PAGE.length}-`, "if-range": ifRange }), PAGE, ifRange);
    }
  });

  it("sends the whole file for several ranges and ignores a malformed Range", async () => {
    for (const [name, body] of Object.entries(FILES)) {
      const path = `/books/ranged-book/${name}`;
      for (const range of [
        "bytes=0-1,5-6",
        "bytes=0-1, -5",
        "bytes=9-2",
        "bytes=abc",
        "bytes=",
        "bytes=-",
        "bytes=1-2-3",
        "bytes=+1-2",
        "bytes=0x10-20",
        "items=0-5",
        "0-5",
        `bytes=${body.length}-, 0-1`,
      ]) {
        expectWhole(await get(path, { range }), body, `${path} ${range}`);
      }
    }
  });

  it("answers HEAD with the whole file's headers, as RFC 9110 defines ranges for GET alone", async () => {
    for (const [name, body] of Object.entries(FILES)) {
      const path = `/books/ranged-book/${name}`;
      const whole = await get(path);
      for (const range of ["bytes=0-99", `bytes=${body.length}-`]) {
        const head = await get(path, { range }, "HEAD");
        expect(head.status, range).toBe(200);
        expect(head.body.length, range).toBe(0);
        expect(head.headers["accept-ranges"], range).toBe("bytes");
        expect(head.headers["content-range"], range).toBeUndefined();
        expect(Number(head.headers["content-length"]), range).toBe(body.length);
        for (const header of SHARED_HEADERS) expect(head.headers[header], `${range} ${header}`).toBe(whole.headers[header]);
      }
    }
  });

  it("answers 304 to an If-None-Match that names the file before looking at the range", async () => {
    for (const [name, body] of Object.entries(FILES)) {
      const path = `/sites/ranged-bakery/${name}`;
      const whole = await get(path);
      for (const range of ["bytes=0-99", `bytes=${body.length}-`]) {
        const answer = await get(path, { range, "if-none-match": whole.headers.etag! });
        expect(answer.status, range).toBe(304);
        expect(answer.body.length, range).toBe(0);
        expect(answer.headers.etag, range).toBe(whole.headers.etag);
        expect(answer.headers["content-range"], range).toBeUndefined();
      }
    }
  });
});
