import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { buildZeroClient, type TransportFactory, type ZeroClient, type ZeroClientOptions } from "./zero-client.js";

// The package's entry under Node: the same client, over Node's own HTTP
// stack (connect-node) instead of fetch. Browsers resolve "." to
// zero-client.ts (built as dist/client/web.js, src/build.ts) through the
// "browser" export condition and never load this.

export * from "./zero-client.js";

export interface NodeTransportOptions {
  /**
   * `connect` (default): the Connect protocol over HTTP/1.1, which passes any
   * proxy. `grpc`: gRPC over HTTP/2 (h2c for `http://`), as other gRPC
   * services would call it.
   */
  protocol?: "connect" | "grpc" | undefined;
}

/** A connect-node transport factory for `createZeroClient({ transport })`. */
export function nodeTransport(options: NodeTransportOptions = {}): TransportFactory {
  return ({ baseUrl, interceptors }) =>
    options.protocol === "grpc" ? createGrpcTransport({ baseUrl, interceptors }) : createConnectTransport({ baseUrl, interceptors, httpVersion: "1.1" });
}

/** A typed client for project-zero; in Node it talks through connect-node by default. */
export function createZeroClient(options: ZeroClientOptions & NodeTransportOptions): ZeroClient {
  const { protocol, ...rest } = options;
  return buildZeroClient(rest, nodeTransport({ protocol }));
}
