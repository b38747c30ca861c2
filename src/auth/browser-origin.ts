import { isIP } from "node:net";
import { ServiceError } from "../server/errors.js";

type RequestHeaders = Pick<Headers, "get">;

/**
 * Whether a request's `Origin` is this service: its public URL, or the host
 * the request was addressed to when that host is an IP address or
 * `localhost`. A host name in `Host` proves nothing: after a DNS rebinding, a
 * page on a name its author controls reaches this service with a matching
 * Origin and Host. A deployment under a host name sets ZERO_PUBLIC_URL.
 */
export function ownOriginCheck(publicUrl: string): (headers: RequestHeaders) => boolean {
  const publicOrigin = new URL(publicUrl).origin;
  return (headers) => {
    const origin = headers.get("origin");
    if (!origin || origin === "null") return false;
    if (origin === publicOrigin) return true;
    // HTTP/2 requests carry it as `:authority`; the listener copies that to Host.
    const host = headers.get("host");
    const url = URL.parse(origin);
    return host !== null && url !== null && url.host === host && isAddressOrLocalhost(url.hostname);
  };
}

/**
 * The refusal of a request whose Origin is not this service's. One from a page elsewhere names the remedy a
 * person who meets it on this service's own pages needs: a deployment reached under a host name with no
 * ZERO_PUBLIC_URL. One with no Origin at all is a client that is not a browser (curl, a script) writing
 * with a session cookie: it is told what to send.
 */
export function crossSiteRefusal(publicUrl: string, origin: string | null): ServiceError {
  if (origin === null) {
    return new ServiceError(
      "permission_denied",
      `a write with a session cookie must carry this service's Origin, and this request sent none: send the header "Origin: ${new URL(publicUrl).origin}", or use an API key instead of the cookie`,
    );
  }
  return new ServiceError(
    "permission_denied",
    "cross-site request refused: the Origin is not this service (an operator serving it under a host name sets ZERO_PUBLIC_URL to that address)",
  );
}

function isAddressOrLocalhost(hostname: string): boolean {
  // URL keeps an IPv6 host in brackets.
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return bare === "localhost" || isIP(bare) !== 0;
}
