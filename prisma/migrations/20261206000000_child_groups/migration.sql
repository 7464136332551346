-- nestjs-durable schema version 7: groups of children started by Durable.startChildren() (a fan-out),
-- counted on one row per group, each child's place in its group, and the order in which the children ended.

-- AlterTable
ALTER TABLE "durable_runs" ADD COLUMN     "group_index" INTEGER,
ADD COLUMN     "group_seq" INTEGER;

-- AlterTable
ALTER TABLE "durable_schema" ALTER COLUMN "version" SET DEFAULT 7;

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

-- CreateIndex
CREATE INDEX "durable_runs_group_idx" ON "durable_runs"("parent_id", "group_seq", "group_index") WHERE (group_seq IS NOT NULL);
