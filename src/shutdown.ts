import type { INestApplication } from '@nestjs/common';

/**
 * Like app.enableShutdownHooks(), plus a last step after Nest has shut down: on SIGINT/SIGTERM
 * close the app (in-flight workflow steps finish, leases are handed back), then run `after`
 * (the example closes its embedded database there), then exit. A second signal exits at once.
 */
export function closeOnSignal(app: INestApplication, after: () => Promise<void>): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) process.exit(1);
    closing = true;
    process.stdout.write(`\n${signal}: shutting down…\n`);
    app
      .close()
      .then(after)
      .then(
        () => process.exit(0),
        (err: unknown) => {
          console.error(err);
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
