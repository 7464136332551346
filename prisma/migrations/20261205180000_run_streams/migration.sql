-- nestjs-durable schema version 6: the chunks a run writes to its streams (Durable.stream), read live
-- and from any position by the app.

-- AlterTable
ALTER TABLE "durable_schema" ALTER COLUMN "version" SET DEFAULT 6;

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

-- CreateIndex
CREATE UNIQUE INDEX "durable_stream_chunks_origin_key" ON "durable_stream_chunks"("run_id", "origin");
