#!/usr/bin/env node
// `npx nestjs-durable …`: the package's command line (plain Node, no dependencies).
import { runCli } from './run-cli.js';
import { runRunsCli } from './runs-cli.js';

const [command, ...rest] = process.argv.slice(2);
const io = { cwd: process.cwd(), out: (text: string) => console.log(text), err: (text: string) => console.error(text) };
if (command === 'runs') runRunsCli(rest, io).then((code) => (process.exitCode = code));
else process.exitCode = runCli(process.argv.slice(2), io);
