import { runCli } from "./cli.js";
import { ExitCode } from "./exit-codes.js";

// A reader that has gone (`project-zero plans --all | head -1`) ends the
// command quietly, wherever it was, as SIGPIPE ends `cat` or `git log`. Node
// ignores SIGPIPE, so the failed write arrives here as an EPIPE 'error'
// instead. Exit 141 (128 + SIGPIPE, what a shell shows for those tools), not
// 0: 0 would tell a script that `run` saw its plan succeed when following it
// stopped half-way; 1 would say the plan failed.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    process.exit(ExitCode.outputClosed);
  });
}

// The `project-zero` command's process: real streams, real signals.
const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  onInterrupt(handler) {
    process.on("SIGINT", handler);
    return () => process.off("SIGINT", handler);
  },
});
// Exit once what was printed is out, without waiting for an idle keep-alive
// connection or a paused stdin that would otherwise hold the shell.
if (code !== undefined) {
  process.exitCode = code;
  await Promise.all([drained(process.stdout), drained(process.stderr)]);
  process.exit(code);
}

function drained(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => stream.write("", () => resolve()));
}
