import { crc32, deflateRawSync } from "node:zlib";

/** One file of a zip archive. */
export interface ZipEntry {
  name: string;
  data: Uint8Array | string;
  /** Store without compression (EPUB requires it for `mimetype`). */
  store?: boolean;
}

/**
 * Writes a zip archive. Hand-written rather than a dependency because EPUB
 * and site downloads need only the plain subset (no zip64, no encryption)
 * and Node already provides the two hard parts, raw deflate and CRC-32; the
 * rest is three fixed headers. The first entry is written first, as the
 * EPUB container rules require for `mimetype`. Timestamps are fixed so the
 * same book always gives the same bytes.
 */
export function zip(entries: readonly ZipEntry[]): Uint8Array {
  const writer = new ZipWriter();
  const parts = [...entries.flatMap((entry) => writer.add(entry)), ...writer.finish()];
  const out = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * The same archive as `zip`, yielded a file at a time: only one file and
 * the central directory (a few dozen bytes a file) are held at once, so a
 * download's memory does not grow with the site.
 */
export async function* zipStream(entries: AsyncIterable<ZipEntry>): AsyncGenerator<Uint8Array> {
  const writer = new ZipWriter();
  for await (const entry of entries) yield* writer.add(entry);
  yield* writer.finish();
}

const encoder = new TextEncoder();
const DOS_TIME = 0;
const DOS_DATE = (1 << 5) | 1; // 1980-01-01, the zip epoch
// Bit 11: names are UTF-8.
const FLAGS = 0x0800;

/** Local headers and bodies as entries are added, then the central directory. */
class ZipWriter {
  readonly #central: Uint8Array[] = [];
  #offset = 0;
  #count = 0;

  add(entry: ZipEntry): Uint8Array[] {
    const name = encoder.encode(entry.name);
    const raw = typeof entry.data === "string" ? encoder.encode(entry.data) : entry.data;
    const body = entry.store ? raw : new Uint8Array(deflateRawSync(raw, { level: 9 }));
    const method = entry.store ? 0 : 8;
    const crc = crc32(raw);

    const local = new DataView(new ArrayBuffer(30));
    local.setUint32(0, 0x04034b50, true);
    local.setUint16(4, 20, true);
    local.setUint16(6, FLAGS, true);
    local.setUint16(8, method, true);
    local.setUint16(10, DOS_TIME, true);
    local.setUint16(12, DOS_DATE, true);
    local.setUint32(14, crc, true);
    local.setUint32(18, body.length, true);
    local.setUint32(22, raw.length, true);
    local.setUint16(26, name.length, true);
    local.setUint16(28, 0, true);

    const header = new DataView(new ArrayBuffer(46));
    header.setUint32(0, 0x02014b50, true);
    header.setUint16(4, 20, true);
    header.setUint16(6, 20, true);
    header.setUint16(8, FLAGS, true);
    header.setUint16(10, method, true);
    header.setUint16(12, DOS_TIME, true);
    header.setUint16(14, DOS_DATE, true);
    header.setUint32(16, crc, true);
    header.setUint32(20, body.length, true);
    header.setUint32(24, raw.length, true);
    header.setUint16(28, name.length, true);
    header.setUint32(42, this.#offset, true);
    this.#central.push(new Uint8Array(header.buffer), name);
    this.#offset += 30 + name.length + body.length;
    this.#count++;
    return [new Uint8Array(local.buffer), name, body];
  }

  finish(): Uint8Array[] {
    const centralSize = this.#central.reduce((sum, c) => sum + c.length, 0);
    const end = new DataView(new ArrayBuffer(22));
    end.setUint32(0, 0x06054b50, true);
    end.setUint16(8, this.#count, true);
    end.setUint16(10, this.#count, true);
    end.setUint32(12, centralSize, true);
    end.setUint32(16, this.#offset, true);
    return [...this.#central, new Uint8Array(end.buffer)];
  }
}
