-- nestjs-durable schema version 3 (flow control, issue 14): a run's concurrency key, the index of
-- executing runs the limited claim counts, the index of pending runs by key it serves in turn, and the table of
-- cluster-wide queue limits.

-- AlterTable
ALTER TABLE "durable_runs" ADD COLUMN     "concurrency_key" TEXT;

-- CreateTable
CREATE TABLE "durable_queue_limits" (
    "queue" TEXT NOT NULL,
    "global_concurrency" INTEGER,
    "key_concurrency" INTEGER,
    "source" TEXT NOT NULL DEFAULT 'runtime',
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "rr_key" TEXT,

    CONSTRAINT "durable_queue_limits_pkey" PRIMARY KEY ("queue")
);

-- CreateIndex
CREATE INDEX "durable_runs_running_idx" ON "durable_runs"("queue", "concurrency_key") WHERE (status = 'RUNNING');

-- CreateIndex
CREATE INDEX "durable_runs_key_idx" ON "durable_runs"("queue", "concurrency_key", "priority", "available_at") WHERE (status = 'PENDING' AND concurrency_key IS NOT NULL);
