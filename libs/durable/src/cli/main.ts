#!/usr/bin/env node
// `npx nestjs-durable …`: the package's command line (plain Node, no dependencies).
import { runCli, type CliIo } from './run-cli.js';
import { runRunsCli } from './runs-cli.js';
import { runVerify } from './verify-command.js';

const io: CliIo = {
  cwd: process.cwd(),
  out: (text) => console.log(text),
  err: (text) => console.error(text),
};
const [command, ...rest] = process.argv.slice(2);
if (command === 'verify') process.exitCode = await runVerify(rest, io);
else if (command === 'runs') process.exitCode = await runRunsCli(rest, io);
else process.exitCode = runCli(process.argv.slice(2), io);
