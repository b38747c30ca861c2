import type { RestRouter } from "./rest.js";
import type { RestRpc, ServiceBinding } from "./rpc-pipeline.js";

/**
 * What one feature adds to the server. Each feature folder exports one
 * function that builds its part from explicit dependencies; app.ts only
 * composes them.
 */
export interface AppPart {
  /** Typed services: served over Connect, gRPC and gRPC-Web, and to REST routes through the same pipeline. */
  services?: readonly ServiceBinding[];
  /** Plain HTTP routes; a route that mirrors an RPC calls it through `rpc`. */
  routes?: (rest: RestRouter, rpc: RestRpc) => void;
  /** Background work started after the port is listening. */
  start?: () => Promise<void> | void;
  /** Stopped after the port stops accepting, before the database closes. */
  stop?: () => Promise<void> | void;
}
