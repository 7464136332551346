-- nestjs-durable schema version 3 (flow control, issue 14: ordering): a run's place in its queue,
-- order_at. Claims take due runs by priority, then order_at; a claimed run moves 1 ms ahead, a child gets its parent's,
-- and a run keeps it through sleeps, waits and recovery, so children and runs recovered from a dead
-- worker go ahead of runs started after their workflow instead of queueing behind the backlog.
-- The claim indexes sort by it (available_at stays in them, last, for the claim's "is it due" test).

-- AlterTable
ALTER TABLE "durable_runs" ADD COLUMN     "order_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- Unfinished runs take their place from when they were created (one not started yet and delayed: from
-- when it is due; one started: 1 ms earlier, as the claim does). Finished runs keep the migration's
-- time (only a resumed one is claimed again).
UPDATE "durable_runs"
SET "order_at" = CASE WHEN started_at IS NOT NULL THEN created_at - interval '1 millisecond'
                      WHEN available_at > created_at THEN available_at ELSE created_at END
WHERE status IN ('PENDING', 'RUNNING', 'WAITING');

-- DropIndex
DROP INDEX "durable_runs_claim_idx";

-- DropIndex
DROP INDEX "durable_runs_key_idx";

-- CreateIndex
CREATE INDEX "durable_runs_claim_idx" ON "durable_runs"("queue", "priority", "order_at", "available_at") WHERE (status = 'PENDING');

-- CreateIndex
CREATE INDEX "durable_runs_key_idx" ON "durable_runs"("queue", "concurrency_key", "priority", "order_at", "available_at") WHERE (status = 'PENDING' AND concurrency_key IS NOT NULL);
