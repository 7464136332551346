-- nestjs-durable schema version 3 (flow control, issue 14): rate limits per queue and per concurrency
-- key (their sliding windows of recent starts), singleton runs (dedupe key: one active run per
-- workflow and key) and debounce (debounce key: one not-yet-started run per workflow and key).

-- AlterTable
ALTER TABLE "durable_queue_limits" ADD COLUMN     "key_rate_limit" INTEGER,
ADD COLUMN     "key_rate_period_ms" INTEGER,
ADD COLUMN     "rate_limit" INTEGER,
ADD COLUMN     "rate_period_ms" INTEGER;

-- AlterTable
ALTER TABLE "durable_runs" ADD COLUMN     "debounce_key" TEXT,
ADD COLUMN     "debounce_until" TIMESTAMPTZ(3),
ADD COLUMN     "dedupe_key" TEXT;

-- CreateTable
CREATE TABLE "durable_rate_windows" (
    "queue" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "starts" TIMESTAMPTZ(3)[],
    "last_start_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "durable_rate_windows_pkey" PRIMARY KEY ("queue","key")
);

-- CreateIndex
CREATE INDEX "durable_rate_windows_last_idx" ON "durable_rate_windows"("last_start_at");

-- CreateIndex
CREATE UNIQUE INDEX "durable_runs_dedupe_idx" ON "durable_runs"("workflow_name", "dedupe_key") WHERE (dedupe_key IS NOT NULL AND status IN ('PENDING','RUNNING','WAITING'));

-- CreateIndex
CREATE UNIQUE INDEX "durable_runs_debounce_idx" ON "durable_runs"("workflow_name", "debounce_key") WHERE (debounce_key IS NOT NULL AND status = 'PENDING' AND started_at IS NULL);
