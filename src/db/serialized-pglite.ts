import { PGliteDialect, type DatabaseConnection, type Driver, type TransactionSettings } from "kysely";

/**
 * PGlite is one session. Kysely's PGlite driver hands the same connection to
 * every caller, so two concurrent transactions would interleave on it. This
 * driver lets one caller hold the connection at a time, which is what a pool
 * of size one means on a real server. Code inside a transaction must use the
 * transaction handle, never the outer `db` (it would wait on itself).
 * @internal
 */
export class SerializedPGliteDialect extends PGliteDialect {
  override createDriver(): Driver {
    return new SerializedDriver(super.createDriver());
  }
}

class SerializedDriver implements Driver {
  #tail: Promise<void> = Promise.resolve();
  #release: (() => void) | undefined;

  constructor(private readonly inner: Driver) {}

  init() {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.#tail;
    let release!: () => void;
    this.#tail = new Promise<void>((resolve) => (release = resolve));
    await previous;
    this.#release = release;
    return this.inner.acquireConnection();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    try {
      await this.inner.releaseConnection(connection);
    } finally {
      const release = this.#release;
      this.#release = undefined;
      release?.();
    }
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
    return this.inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection) {
    return this.inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection) {
    return this.inner.rollbackTransaction(connection);
  }

  savepoint: Driver["savepoint"] = (connection, name, compile) => this.inner.savepoint!(connection, name, compile);
  rollbackToSavepoint: Driver["rollbackToSavepoint"] = (connection, name, compile) => this.inner.rollbackToSavepoint!(connection, name, compile);
  releaseSavepoint: Driver["releaseSavepoint"] = (connection, name, compile) => this.inner.releaseSavepoint!(connection, name, compile);

  destroy() {
    return this.inner.destroy();
  }
}
