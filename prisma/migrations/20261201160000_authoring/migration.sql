-- nestjs-durable schema version 3 (workflow authoring, issue 19): compensations recorded with their
-- step's checkpoint, the compensating cancel (cancel(id, { compensate: true })), and live progress
-- of long steps.

-- AlterTable
ALTER TABLE "durable_runs" ADD COLUMN     "cancel_requested_at" TIMESTAMPTZ(3),
ADD COLUMN     "progress" JSONB;

-- AlterTable
ALTER TABLE "durable_steps" ADD COLUMN     "compensates" INTEGER,
ADD COLUMN     "compensation" JSONB;

-- AlterTable
ALTER TABLE "durable_schema" ALTER COLUMN "version" SET DEFAULT 3;
