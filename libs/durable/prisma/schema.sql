-- nestjs-durable schema version 7: the durable_* tables, for apps that run their own SQL migrations
-- (with Prisma migrations, `npx nestjs-durable init` adds durable.prisma to your schema instead).
-- Add it to your migrations once; it creates the tables in the schema the migration runs in (search_path).
-- A later release that changes them ships prisma/upgrades/<from>-to-<to>.sql.
-- Generated from durable.prisma by scripts/durable-sql.mjs (prisma migrate diff --from-empty): do not edit.

-- CreateTable
CREATE TABLE "durable_runs" (
    "id" TEXT NOT NULL,
    "workflow_name" TEXT NOT NULL,
    "queue" TEXT NOT NULL DEFAULT 'default',
    "status" TEXT NOT NULL DEFAULT 'PENDING',
    "input" JSONB,
    "output" JSONB,
    "error" JSONB,
    "priority" INTEGER NOT NULL DEFAULT 0,
    "available_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "order_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lease_owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(3),
    "lease_epoch" INTEGER NOT NULL DEFAULT 0,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "parent_id" TEXT,
    "group_seq" INTEGER,
    "group_index" INTEGER,
    "app_version" TEXT,
    "deadline_at" TIMESTAMPTZ(3),
    "schedule_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "cancel_requested_at" TIMESTAMPTZ(3),
    "progress" JSONB,
    "concurrency_key" TEXT,
    "traceparent" TEXT,
    "context" JSONB,
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "dedupe_key" TEXT,
    "debounce_key" TEXT,
    "debounce_until" TIMESTAMPTZ(3),

    CONSTRAINT "durable_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "durable_steps" (
    "run_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "output" JSONB,
    "error" JSONB,
    "attempts" INTEGER NOT NULL DEFAULT 1,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "compensation" JSONB,
    "compensates" INTEGER,

    CONSTRAINT "durable_steps_pkey" PRIMARY KEY ("run_id","seq")
);

-- CreateTable
CREATE TABLE "durable_messages" (
    "id" BIGSERIAL NOT NULL,
    "run_id" TEXT NOT NULL,
    "topic" TEXT NOT NULL,
    "payload" JSONB,
    "idempotency_key" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "consumed_seq" INTEGER,
    "consumed_at" TIMESTAMPTZ(3),
    "traceparent" TEXT,

    CONSTRAINT "durable_messages_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "durable_events" (
    "run_id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "value" JSONB,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "durable_events_pkey" PRIMARY KEY ("run_id","key")
);

-- CreateTable
CREATE TABLE "durable_run_events" (
    "id" BIGSERIAL NOT NULL,
    "run_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "detail" JSONB,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "durable_run_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "durable_child_groups" (
    "run_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "workflow" TEXT NOT NULL,
    "total" INTEGER NOT NULL,
    "created" INTEGER NOT NULL DEFAULT 0,
    "ended" INTEGER NOT NULL DEFAULT 0,
    "succeeded" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "cancelled" INTEGER NOT NULL DEFAULT 0,
    "wake_at" INTEGER NOT NULL DEFAULT 0,
    "ends" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "durable_child_groups_pkey" PRIMARY KEY ("run_id","seq")
);

-- CreateTable
CREATE TABLE "durable_group_ends" (
    "run_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "ord" INTEGER NOT NULL,
    "child_index" INTEGER NOT NULL,
    "status" TEXT NOT NULL,
    "error" JSONB,

    CONSTRAINT "durable_group_ends_pkey" PRIMARY KEY ("run_id","seq","ord")
);

-- CreateTable
CREATE TABLE "durable_stream_chunks" (
    "run_id" TEXT NOT NULL,
    "stream" TEXT NOT NULL,
    "position" INTEGER NOT NULL,
    "origin" TEXT NOT NULL,
    "value" JSONB,
    "is_end" BOOLEAN NOT NULL DEFAULT false,
    "written_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "durable_stream_chunks_pkey" PRIMARY KEY ("run_id","stream","position")
);

-- CreateTable
CREATE TABLE "durable_hook_cursors" (
    "consumer" TEXT NOT NULL,
    "last_event_id" BIGINT NOT NULL,
    "owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "durable_hook_cursors_pkey" PRIMARY KEY ("consumer")
);

-- CreateTable
CREATE TABLE "durable_schema" (
    "version" INTEGER NOT NULL DEFAULT 7,

    CONSTRAINT "durable_schema_pkey" PRIMARY KEY ("version")
);

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
    "declared_versions" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "durable_schedules_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "durable_queue_limits" (
    "queue" TEXT NOT NULL,
    "global_concurrency" INTEGER,
    "key_concurrency" INTEGER,
    "source" TEXT NOT NULL DEFAULT 'runtime',
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "rr_key" TEXT,
    "rate_limit" INTEGER,
    "rate_period_ms" INTEGER,
    "key_rate_limit" INTEGER,
    "key_rate_period_ms" INTEGER,

    CONSTRAINT "durable_queue_limits_pkey" PRIMARY KEY ("queue")
);

-- CreateTable
CREATE TABLE "durable_rate_windows" (
    "queue" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "starts" TIMESTAMPTZ(3)[],
    "last_start_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "durable_rate_windows_pkey" PRIMARY KEY ("queue","key")
);

-- CreateIndex
CREATE INDEX "durable_runs_claim_idx" ON "durable_runs"("queue", "priority", "order_at", "available_at") WHERE (status = 'PENDING');

-- CreateIndex
CREATE INDEX "durable_runs_wake_idx" ON "durable_runs"("queue", "available_at") WHERE (status = 'WAITING');

-- CreateIndex
CREATE INDEX "durable_runs_lease_idx" ON "durable_runs"("lease_expires_at") WHERE (status = 'RUNNING');

-- CreateIndex
CREATE INDEX "durable_runs_running_idx" ON "durable_runs"("queue", "concurrency_key") WHERE (status = 'RUNNING');

-- CreateIndex
CREATE INDEX "durable_runs_key_idx" ON "durable_runs"("queue", "concurrency_key", "priority", "order_at", "available_at") WHERE (status = 'PENDING' AND concurrency_key IS NOT NULL);

-- CreateIndex
CREATE INDEX "durable_runs_deadline_idx" ON "durable_runs"("deadline_at") WHERE (deadline_at IS NOT NULL AND status IN ('PENDING','RUNNING','WAITING'));

-- CreateIndex
CREATE INDEX "durable_runs_finished_idx" ON "durable_runs"("finished_at") WHERE (finished_at IS NOT NULL);

-- CreateIndex
CREATE INDEX "durable_runs_created_idx" ON "durable_runs"("created_at");

-- CreateIndex
CREATE INDEX "durable_runs_parent_idx" ON "durable_runs"("parent_id");

-- CreateIndex
CREATE INDEX "durable_runs_group_idx" ON "durable_runs"("parent_id", "group_seq", "group_index") WHERE (group_seq IS NOT NULL);

-- CreateIndex
CREATE INDEX "durable_runs_status_created_idx" ON "durable_runs"("status", "created_at");

-- CreateIndex
CREATE INDEX "durable_runs_workflow_created_idx" ON "durable_runs"("workflow_name", "created_at");

-- CreateIndex
CREATE INDEX "durable_runs_updated_idx" ON "durable_runs"("updated_at");

-- CreateIndex
CREATE INDEX "durable_runs_id_pattern_idx" ON "durable_runs"("id" text_pattern_ops);

-- CreateIndex
CREATE INDEX "durable_runs_schedule_idx" ON "durable_runs"("schedule_id", "created_at") WHERE (schedule_id IS NOT NULL);

-- CreateIndex
CREATE INDEX "durable_runs_tags_idx" ON "durable_runs" USING GIN ("tags" array_ops) WHERE (tags <> '{}');

-- CreateIndex
CREATE UNIQUE INDEX "durable_runs_dedupe_idx" ON "durable_runs"("workflow_name", "dedupe_key") WHERE (dedupe_key IS NOT NULL AND status IN ('PENDING','RUNNING','WAITING'));

-- CreateIndex
CREATE UNIQUE INDEX "durable_runs_debounce_idx" ON "durable_runs"("workflow_name", "debounce_key") WHERE (debounce_key IS NOT NULL AND status = 'PENDING' AND started_at IS NULL);

-- CreateIndex
CREATE INDEX "durable_messages_pending_idx" ON "durable_messages"("run_id", "topic", "id") WHERE (consumed_at IS NULL);

-- CreateIndex
CREATE UNIQUE INDEX "durable_messages_idempotency_key" ON "durable_messages"("run_id", "idempotency_key");

-- CreateIndex
CREATE INDEX "durable_run_events_run_idx" ON "durable_run_events"("run_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "durable_stream_chunks_origin_key" ON "durable_stream_chunks"("run_id", "origin");

-- CreateIndex
CREATE INDEX "durable_schedules_due_idx" ON "durable_schedules"("next_fire_at", "id") WHERE (NOT paused);

-- CreateIndex
CREATE INDEX "durable_schedules_buffered_idx" ON "durable_schedules"("id") WHERE (buffered_slot IS NOT NULL);

-- CreateIndex
CREATE INDEX "durable_schedules_workflow_idx" ON "durable_schedules"("workflow_name", "id");

-- CreateIndex
CREATE INDEX "durable_rate_windows_last_idx" ON "durable_rate_windows"("last_start_at");

-- AddForeignKey
ALTER TABLE "durable_steps" ADD CONSTRAINT "durable_steps_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "durable_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
