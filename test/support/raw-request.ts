import http from "node:http";
import { brotliDecompressSync, gunzipSync } from "node:zlib";

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body's bytes as they came over the wire, still encoded. */
  body: Buffer;
}

/**
 * A request whose answer is read as sent: fetch decodes a compressed body by
 * itself and asks for gzip on its own, so it cannot show what the server
 * sent. The path is sent as written.
 */
export function rawRequest(baseUrl: string, pathname: string, options: { method?: string; headers?: Record<string, string> } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}/`, { path: pathname, method: options.method ?? "GET", headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** The body decoded as its `Content-Encoding` says (none, gzip or br). */
export function decodedBody(answer: RawAnswer): Buffer {
  switch (answer.headers["content-encoding"]) {
    case undefined:
      return answer.body;
    case "gzip":
      return gunzipSync(answer.body);
    case "br":
      return brotliDecompressSync(answer.body);
    default:
      throw new Error(`unexpected content-encoding ${answer.headers["content-encoding"]}`);
  }
}

/** The tokens a `Vary` header names, lower-cased. */
export function varyTokens(answer: RawAnswer): string[] {
  return String(answer.headers.vary ?? "")
    .split(",")
    .map((token) => token.trim().toLowerCase())
    .filter(Boolean);
}
