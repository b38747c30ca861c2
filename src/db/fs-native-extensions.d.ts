/** The two calls we use of fs-native-extensions, which ships no types. Locks are per open file, released on close or exit. */
declare module "fs-native-extensions" {
  /** Takes an exclusive lock on the whole file without waiting; false when another open file holds one. */
  export function tryLock(fd: number, offset?: number, length?: number, options?: { shared?: boolean }): boolean;
  export function unlock(fd: number, offset?: number, length?: number): void;
}
