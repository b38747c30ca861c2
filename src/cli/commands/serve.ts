import type { CliContext } from "../context.js";

/**
 * `serve`: starts the service in this process, exactly as `npm start` does
 * (src/main.ts: configuration from the environment, graceful SIGTERM).
 * `--port` and `--host` are shorthands for PORT and HOST.
 */
export async function serveCommand(ctx: CliContext, args: { port: string | undefined; host: string | undefined }): Promise<void> {
  if (args.port !== undefined) ctx.io.env.PORT = args.port;
  if (args.host !== undefined) ctx.io.env.HOST = args.host;
  await import("../../main.js");
}
