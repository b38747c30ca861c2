import { execFileSync } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";

/** A throwaway self-signed certificate for localhost, as the env the server reads it from, and a way to remove it. */
export async function selfSignedCertificate(): Promise<{ env: { ZERO_TLS_CERT_FILE: string; ZERO_TLS_KEY_FILE: string }; remove(): Promise<void> }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "zero-tls-"));
  const cert = path.join(dir, "cert.pem");
  const key = path.join(dir, "key.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-keyout",
      key,
      "-out",
      cert,
    ],
    { stdio: "ignore" },
  );
  return { env: { ZERO_TLS_CERT_FILE: cert, ZERO_TLS_KEY_FILE: key }, remove: () => fs.rm(dir, { recursive: true, force: true }) };
}
