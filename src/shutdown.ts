import type { INestApplication } from '@nestjs/common';

/**
 * Like app.enableShutdownHooks(), plus a last step after Nest has shut down: on SIGINT/SIGTERM
 * close the app (in-flight workflow steps finish, leases are handed back), then run `after`
 * (the example closes its embedded database there), then exit. Another signal more than a second
 * later exits at once (Ctrl-C under `npm start` arrives twice: from the terminal and from npm).
 */
export function closeOnSignal(app: INestApplication, after: () => Promise<void>): void {
  let closingSince = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closingSince) {
      if (Date.now() - closingSince > 1_000) process.exit(1);
      return;
    }
    closingSince = Date.now();
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
