import net from "node:net";

/** Parses `ZERO_TRUSTED_PROXIES` entries (`addr` or `addr/prefix`, IPv4 or IPv6); returns the problem, if any. */
export function parseTrustedProxies(entries: readonly string[]): { list: net.BlockList; problem?: string } {
  const list = new net.BlockList();
  for (const entry of entries) {
    const [address = "", prefix, extra] = entry.split("/");
    const family = net.isIP(address);
    const bits = prefix === undefined ? (family === 6 ? 128 : 32) : Number(prefix);
    if (family === 0 || extra !== undefined || !Number.isInteger(bits) || bits < 0 || bits > (family === 6 ? 128 : 32) || prefix === "") {
      return { list, problem: `"${entry}" is not an address or CIDR range` };
    }
    list.addSubnet(address, bits, family === 6 ? "ipv6" : "ipv4");
  }
  return { list };
}

/**
 * The address a request came from, for per-address limits. The socket's peer,
 * unless that peer is one of the trusted proxies: then `X-Forwarded-For` is
 * read from the right, skipping trusted hops, and the first address that is
 * not a trusted proxy is the client's. A client can append what it likes on
 * the left of that header, so nothing left of the first untrusted hop counts.
 */
export function clientAddressResolver(trusted: net.BlockList | undefined) {
  const isTrusted = (address: string) => {
    const family = net.isIP(address);
    return family !== 0 && trusted!.check(address, family === 6 ? "ipv6" : "ipv4");
  };
  return (peer: string | undefined, forwardedFor: string | string[] | undefined): string => {
    const client = plain(peer ?? "");
    if (!trusted || !isTrusted(client) || forwardedFor === undefined) return client;
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor).split(",");
    let nearest = client;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = plain(hops[i]!.trim());
      if (net.isIP(hop) === 0) return nearest;
      if (!isTrusted(hop)) return hop;
      nearest = hop;
    }
    return nearest;
  };
}

/** `::ffff:127.0.0.1` as `127.0.0.1`, so one client has one address whichever way its socket was accepted. */
function plain(address: string): string {
  return address.startsWith("::ffff:") && net.isIPv4(address.slice(7)) ? address.slice(7) : address;
}
