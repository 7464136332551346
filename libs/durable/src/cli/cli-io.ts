/** Where a command writes: the command line's stdout and stderr, or a test's buffers. */
export interface CliIo {
  cwd: string;
  out(text: string): void;
  err(text: string): void;
  /** Asks a yes/no question on a terminal; absent when no one can answer (then only --yes confirms). */
  confirm?(question: string): Promise<boolean>;
}
