-- nestjs-durable schema version 3 (operations, issue 18): tags given at start (start(…, { tags })),
-- searched by the admin API, the dashboard and the CLI. The GIN index holds tagged runs only, so a
-- start without tags writes nothing to it.

-- AlterTable
ALTER TABLE "durable_runs" ADD COLUMN     "tags" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- CreateIndex
CREATE INDEX "durable_runs_tags_idx" ON "durable_runs" USING GIN ("tags" array_ops) WHERE (tags <> '{}');
