import type { Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";

/** The three RPC protocols the one port serves. */
export const PROTOCOLS = ["connect", "grpc", "grpc-web"] as const;
export type Protocol = (typeof PROTOCOLS)[number];

/** A fresh connect-node transport to `baseUrl` in `protocol` (HTTP/1.1 where the protocol allows, as browsers use it). */
export function rpcTransport(baseUrl: string, protocol: Protocol): Transport {
  switch (protocol) {
    case "connect":
      return createConnectTransport({ baseUrl, httpVersion: "1.1" });
    case "grpc":
      return createGrpcTransport({ baseUrl });
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
  }
}
