-- nestjs-durable schema version 5: a run keeps the app's context it was started in (engine option
-- `context`), restored around its workflow and steps.

-- AlterTable
ALTER TABLE "durable_runs" ADD COLUMN     "context" JSONB;

-- AlterTable
ALTER TABLE "durable_schema" ALTER COLUMN "version" SET DEFAULT 5;
