#!/usr/bin/env node
// `npx nestjs-durable …`: the package's command line (plain Node, no dependencies).
import { runCli } from './run-cli.js';

process.exitCode = runCli(process.argv.slice(2), {
  cwd: process.cwd(),
  out: (text) => console.log(text),
  err: (text) => console.error(text),
});
