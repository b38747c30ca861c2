import type { Logger } from "../observability/logger.js";
import type { AppPart } from "../server/app-part.js";
import { consoleRoutes } from "./console-routes.js";

/** The Console: its pages and bundled assets under `/console`; what they call is the account and execution services. */
export function consolePart(options: { publicUrl: string; logger: Logger }): AppPart {
  return { routes: (rest) => consoleRoutes(rest, options) };
}
