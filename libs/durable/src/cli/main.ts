#!/usr/bin/env node
// `npx nestjs-durable …`: the package's command line (plain Node, no dependencies).
import { runCli, type CliIo } from './run-cli.js';
import { runVerify } from './verify-command.js';

const io: CliIo = {
  cwd: process.cwd(),
  out: (text) => console.log(text),
  err: (text) => console.error(text),
};
const argv = process.argv.slice(2);
process.exitCode = argv[0] === 'verify' ? await runVerify(argv.slice(1), io) : runCli(argv, io);
