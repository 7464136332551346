#!/usr/bin/env node
// `npx nestjs-durable …`: the package's command line (plain Node, no dependencies).
import type { CliIo } from './cli-io.js';
import { runInit } from './init-command.js';
import { runRunsCommand } from './runs-command.js';
import { runVerifyCommand } from './verify-command.js';

const io: CliIo = {
  cwd: process.cwd(),
  out: (text) => console.log(text),
  err: (text) => console.error(text),
};
const [command, ...rest] = process.argv.slice(2);
if (command === 'verify') process.exitCode = await runVerifyCommand(rest, io);
else if (command === 'runs') process.exitCode = await runRunsCommand(rest, io);
else process.exitCode = runInit(process.argv.slice(2), io);
