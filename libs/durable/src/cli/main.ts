#!/usr/bin/env node
// `npx nestjs-durable …`: the package's command line (plain Node, no dependencies).
import { createInterface } from 'node:readline/promises';
import type { CliIo } from './cli-io.js';
import { runInit } from './init-command.js';
import { runBackfillsCommand } from './backfills-command.js';
import { runDistributeCommand } from './distribute-command.js';
import { runRunsCommand } from './runs-command.js';
import { runSchedulesCommand } from './schedules-command.js';
import { runVerifyCommand } from './verify-command.js';

const io: CliIo = {
  cwd: process.cwd(),
  out: (text) => console.log(text),
  err: (text) => console.error(text),
  // Questions only when someone is at a terminal; in a pipe or CI only --yes confirms.
  confirm:
    process.stdin.isTTY && process.stderr.isTTY
      ? async (question) => {
          const rl = createInterface({ input: process.stdin, output: process.stderr });
          try {
            return /^y(es)?$/i.test((await rl.question(question)).trim());
          } finally {
            rl.close();
          }
        }
      : undefined,
};
const [command, ...rest] = process.argv.slice(2);
if (command === 'verify') process.exitCode = await runVerifyCommand(rest, io);
else if (command === 'runs') process.exitCode = await runRunsCommand(rest, io);
else if (command === 'schedules') process.exitCode = await runSchedulesCommand(rest, io);
else if (command === 'backfills') process.exitCode = await runBackfillsCommand(rest, io);
else if (command === 'distribute') process.exitCode = await runDistributeCommand(rest, io);
else process.exitCode = runInit(process.argv.slice(2), io);
