/** Where a command writes: the command line's stdout and stderr, or a test's buffers. */
export interface CliIo {
  cwd: string;
  out(text: string): void;
  err(text: string): void;
}
