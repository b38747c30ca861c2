#!/usr/bin/env node
// The `project-zero` command. The package ships TypeScript sources, so this
// launcher registers tsx's ESM loader (what `node --import tsx` does) in this
// same process and then imports the CLI: one process, so Ctrl-C, the TTY and
// the exit code need no forwarding. Paths resolve from this file, so the
// command works from any directory and after `npm install` / `npx`.
import { register } from "tsx/esm/api";

register();
await import(new URL("./main.ts", import.meta.url).href);
