import { randomBytes } from "node:crypto";
import type { Logger } from "../logger.js";
import type { NodeRequest } from "./rest.js";

/** What the outer handler learns of each request before any route sees it. */
export interface RequestInfo {
  id: string;
  log: Logger;
  clientAddress: string;
  startedAt: bigint;
}

const infos = new WeakMap<NodeRequest, RequestInfo>();

/** A caller-supplied id is kept when it is short and printable; otherwise we make one. */
const ACCEPTABLE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function assignRequestInfo(req: NodeRequest, log: Logger): RequestInfo {
  const supplied = req.headers["x-request-id"];
  const id = typeof supplied === "string" && ACCEPTABLE_ID.test(supplied) ? supplied : `req_${randomBytes(9).toString("base64url")}`;
  const info: RequestInfo = {
    id,
    log: log.child({ requestId: id }),
    clientAddress: req.socket?.remoteAddress ?? "",
    startedAt: process.hrtime.bigint(),
  };
  infos.set(req, info);
  return info;
}

export function requestInfo(req: NodeRequest): RequestInfo | undefined {
  return infos.get(req);
}
