import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { ConnectError, createHandlerContext } from "@connectrpc/connect";
import type { KyselyPlugin, OperationNode, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangePasswordRequestSchema, ConsoleService, SignInRequestSchema } from "../../gen/zero/v1/console_pb.js";
import { SCOPES } from "../../src/api/scopes.js";
import { accountService } from "../../src/auth/account-service.js";
import { principalKey } from "../../src/server/context.js";
import { consoleClient, sessionHeaders, signUp } from "../support/accounts.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { onRealPostgres } from "../support/database.js";

/**
 * Holds the caller of one query after the database has answered it, until
 * the test releases it: the test decides what commits in between, as a slow
 * hash or a busy instance would. The first query `picks` matches is held.
 */
class PauseAfter implements KyselyPlugin {
  readonly reached: Promise<void>;
  #reached!: () => void;
  #release!: () => void;
  readonly #released = new Promise<void>((resolve) => (this.#release = resolve));
  #held: unknown;

  constructor(private readonly picks: (node: RootOperationNode) => boolean) {
    this.reached = new Promise<void>((resolve) => (this.#reached = resolve));
  }

  transformQuery({ node, queryId }: PluginTransformQueryArgs): RootOperationNode {
    if (this.#held === undefined && this.picks(node)) this.#held = queryId;
    return node;
  }

  async transformResult({ queryId, result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (queryId === this.#held) {
      this.#reached();
      await this.#released;
    }
    return result;
  }

  release(): void {
    this.#release();
  }
}

/** The table a query works on: a select's first FROM, or an update's target. */
function tableOf(node: RootOperationNode): string | undefined {
  const target: OperationNode | undefined = node.kind === "SelectQueryNode" ? node.from?.froms[0] : node.kind === "UpdateQueryNode" ? node.table : undefined;
  return target?.kind === "TableNode" ? (target as OperationNode & { table: { identifier: { name: string } } }).table.identifier.name : undefined;
}

/** The real account service on the app's database, with `plugin` in the way of its queries. */
function serviceWith(app: TestApp, plugin: KyselyPlugin) {
  return accountService({ db: app.store.db.withPlugin(plugin), config: app.config, apiKeys: { forget: () => {} } });
}

function contextFor(app: TestApp, method: "signIn" | "changePassword", principal?: { accountId: string; sessionId: string }) {
  const context = createHandlerContext({
    service: ConsoleService,
    method: ConsoleService.method[method],
    protocolName: "connect",
    requestMethod: "POST",
    url: `${app.url}/zero.v1.ConsoleService/${method}`,
  });
  if (principal) context.values.set(principalKey, { accountId: principal.accountId, via: "session", scopes: SCOPES, credentialId: principal.sessionId });
  return context;
}

async function liveSessionIds(app: TestApp, accountId: string): Promise<string[]> {
  const rows = await app.store.db.selectFrom("sessions").select("id").where("account_id", "=", accountId).where("revoked_at", "is", null).execute();
  return rows.map((row) => row.id);
}

/** What `call` threw, or undefined when it succeeded. */
async function failureOf(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
    return undefined;
  } catch (error) {
    return error;
  }
}

/** What a sign-in with a wrong password answers: the code and message a loser of the race must give too. */
async function wrongPasswordAnswer(app: TestApp, email: string) {
  const error = await failureOf(() => consoleClient(app.url).signIn({ email, password: "not the password at all" }));
  expect(error).toBeInstanceOf(ConnectError);
  return { code: (error as ConnectError).code, message: (error as ConnectError).rawMessage };
}

describe("a password change races a sign-in with the old password", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it("a sign-in that read the old password before the change committed is refused like a wrong password and holds no session", async () => {
    const email = "race-read@example.test";
    const { accountId, cookie } = await signUp(app.url, email, "the old password");
    const wrong = await wrongPasswordAnswer(app, email);

    // The sign-in reads the account, then waits while the owner's change commits, then goes on.
    const pause = new PauseAfter((node) => node.kind === "SelectQueryNode" && tableOf(node) === "accounts");
    const context = contextFor(app, "signIn");
    const signingIn = failureOf(async () => serviceWith(app, pause).signIn(create(SignInRequestSchema, { email, password: "the old password" }), context));
    await pause.reached;
    let fresh = "";
    await consoleClient(app.url).changePassword(
      { currentPassword: "the old password", newPassword: "the new password" },
      { headers: sessionHeaders(app.url, cookie), onHeader: (h) => (fresh = (h.get("set-cookie") ?? "").split(";")[0]!) },
    );
    pause.release();
    const outcome = await signingIn;

    expect(outcome).toBeInstanceOf(ConnectError);
    expect({ code: (outcome as ConnectError).code, message: (outcome as ConnectError).rawMessage }).toEqual(wrong);
    expect(context.responseHeader.get("set-cookie")).toBeNull();
    // The only live session is the one the change handed its caller.
    expect(await liveSessionIds(app, accountId)).toHaveLength(1);
    await expect(consoleClient(app.url).getSession({}, { headers: { cookie: fresh } })).resolves.toBeDefined();
  });

  // Another instance's sign-in can reach its insert while the change's transaction is open; only a real server has two at once.
  it.runIf(onRealPostgres)(
    "a sign-in that reaches its session while the change's transaction is open waits for it, and is refused like a wrong password",
    async () => {
      const email = "race-open@example.test";
      const { accountId, cookie } = await signUp(app.url, email, "the old password");
      const wrong = await wrongPasswordAnswer(app, email);
      const { id: sessionId } = (await app.store.db.selectFrom("sessions").select("id").where("account_id", "=", accountId).executeTakeFirst())!;

      // The change has replaced the password and ended the sessions, and has not committed yet.
      const pause = new PauseAfter((node) => node.kind === "UpdateQueryNode" && tableOf(node) === "sessions");
      const changeContext = contextFor(app, "changePassword", { accountId, sessionId });
      const changing = failureOf(async () =>
        serviceWith(app, pause).changePassword(
          create(ChangePasswordRequestSchema, { currentPassword: "the old password", newPassword: "the new password" }),
          changeContext,
        ),
      );
      await pause.reached;

      let signedIn = false;
      const signingIn = failureOf(() => consoleClient(app.url).signIn({ email, password: "the old password" })).finally(() => (signedIn = true));
      const admin = new pg.Client({ connectionString: app.databaseUrl });
      await admin.connect();
      try {
        const waitingOnALock = async () =>
          (await admin.query(`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)).rowCount! > 0;
        while (!signedIn && !(await waitingOnALock())) await sleep(5);
      } finally {
        await admin.end();
      }
      pause.release();
      expect(await changing).toBeUndefined();
      const outcome = await signingIn;

      expect(outcome).toBeInstanceOf(ConnectError);
      expect({ code: (outcome as ConnectError).code, message: (outcome as ConnectError).rawMessage }).toEqual(wrong);
      const fresh = (changeContext.responseHeader.get("set-cookie") ?? "").split(";")[0]!;
      expect(await liveSessionIds(app, accountId)).toHaveLength(1);
      await expect(consoleClient(app.url).getSession({}, { headers: { cookie: fresh } })).resolves.toBeDefined();
      expect(await failureOf(() => consoleClient(app.url).getSession({}, { headers: { cookie } }))).toBeInstanceOf(ConnectError);
    },
  );
});
