-- AlterTable
ALTER TABLE "durable_runs" ADD COLUMN     "schedule_id" TEXT;

-- CreateTable
CREATE TABLE "durable_schedules" (
    "id" TEXT NOT NULL,
    "workflow_name" TEXT NOT NULL,
    "source" TEXT NOT NULL DEFAULT 'runtime',
    "cron" TEXT NOT NULL,
    "time_zone" TEXT NOT NULL DEFAULT 'UTC',
    "input" JSONB,
    "catch_up" TEXT NOT NULL DEFAULT 'latest',
    "catch_up_window_ms" BIGINT NOT NULL DEFAULT 86400000,
    "overlap" TEXT NOT NULL DEFAULT 'skip',
    "jitter_ms" INTEGER NOT NULL DEFAULT 0,
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "next_fire_at" TIMESTAMPTZ(3) NOT NULL,
    "buffered_slot" TIMESTAMPTZ(3),
    "last_run_id" TEXT,
    "last_slot_at" TIMESTAMPTZ(3),
    "last_fired_at" TIMESTAMPTZ(3),
    "revision" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "durable_schedules_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "durable_schedules_due_idx" ON "durable_schedules"("next_fire_at", "id") WHERE (NOT paused);

-- CreateIndex
CREATE INDEX "durable_schedules_buffered_idx" ON "durable_schedules"("id") WHERE (buffered_slot IS NOT NULL);

-- CreateIndex
CREATE INDEX "durable_schedules_workflow_idx" ON "durable_schedules"("workflow_name", "id");

-- CreateIndex
CREATE INDEX "durable_runs_schedule_idx" ON "durable_runs"("schedule_id", "created_at") WHERE (schedule_id IS NOT NULL);
