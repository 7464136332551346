-- nestjs-durable schema version 3 (telemetry, issue 17): the trace context a run was started in, and
-- the lifecycle hooks' cursors over the run history.

-- AlterTable
ALTER TABLE "durable_runs" ADD COLUMN     "traceparent" TEXT;

-- CreateTable
CREATE TABLE "durable_hook_cursors" (
    "consumer" TEXT NOT NULL,
    "last_event_id" BIGINT NOT NULL,
    "owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "durable_hook_cursors_pkey" PRIMARY KEY ("consumer")
);
