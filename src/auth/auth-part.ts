import { ConsoleService } from "../../gen/zero/v1/console_pb.js";
import type { Config } from "../config.js";
import type { Store } from "../db/database.js";
import type { Logger } from "../observability/logger.js";
import type { Authenticator } from "../server/access.js";
import type { AppPart } from "../server/app-part.js";
import { hourlySweep } from "../server/hourly-sweep.js";
import { bindService } from "../server/rpc-pipeline.js";
import { accountService } from "./account-service.js";
import { deleteEndedSessions } from "./accounts.js";
import { createApiKeyCache } from "./api-key-cache.js";
import { createAuthenticator } from "./authenticator.js";
import { forgetStaleSignInRecords } from "./sign-in-limiter.js";

/** Accounts as the app mounts them, plus the authenticator every other part's calls pass through. */
export interface AuthPart extends AppPart {
  authenticator: Authenticator;
}

/**
 * Auth: who a caller is (sessions and API keys, with live keys cached and
 * revocations heard from other instances), and the account use cases
 * (ConsoleService: sign-up, sign-in, keys).
 */
export function authPart(deps: { config: Config; store: Store; logger: Logger }): AuthPart {
  const { config, store } = deps;
  const apiKeys = createApiKeyCache(store, deps.logger);
  // Ended sessions and stale sign-in records hold e-mails and addresses nothing reads any more.
  const sweeper = hourlySweep(deps.logger, "ended sessions and old sign-in records", [
    () => deleteEndedSessions(store.db),
    () => forgetStaleSignInRecords(store.db),
  ]);
  return {
    authenticator: createAuthenticator({ db: store.db, config, apiKeys }),
    services: [bindService(ConsoleService, accountService({ db: store.db, config, apiKeys }))],
    async start() {
      await apiKeys.start();
      sweeper.start();
    },
    async stop() {
      sweeper.stop();
      await apiKeys.stop();
    },
  };
}
