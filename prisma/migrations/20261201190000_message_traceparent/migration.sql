-- nestjs-durable schema version 3 (telemetry, issue 17): the trace context a message was sent in, so
-- the span of the recv that receives it links to the sender's trace.

-- AlterTable
ALTER TABLE "durable_messages" ADD COLUMN     "traceparent" TEXT;
