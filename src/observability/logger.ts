import { pino, type Logger } from "pino";

export type { Logger };

/**
 * Structured JSON logs. Credentials are redacted wherever they could appear,
 * so a log line never carries a password, session token or key secret.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: "project-zero" },
      redact: {
        paths: [
          "password",
          "*.password",
          "secret",
          "*.secret",
          "authorization",
          "*.authorization",
          "headers.authorization",
          "headers.cookie",
          "req.headers.authorization",
          "req.headers.cookie",
          "apiKey",
          "*.apiKey",
        ],
        censor: "[redacted]",
      },
    },
    destination as pino.DestinationStream | undefined,
  );
}
