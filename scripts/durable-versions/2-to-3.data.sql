-- Unfinished runs take their place in their queue (order_at, new in version 3) from when they were
-- created: one not started yet and delayed, from when it is due; one started, 1 ms earlier, as the
-- claim does. Finished runs keep the upgrade's time (only a resumed one is claimed again). Without
-- it every unfinished run would have the upgrade's time: a delayed one would sit in the claim
-- index ahead of the due runs, and every claim would pass over it until it is due.
UPDATE "durable_runs"
SET "order_at" = CASE WHEN started_at IS NOT NULL THEN created_at - interval '1 millisecond'
                      WHEN available_at > created_at THEN available_at ELSE created_at END
WHERE status IN ('PENDING', 'RUNNING', 'WAITING');
