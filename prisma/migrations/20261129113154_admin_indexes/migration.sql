-- Admin API indexes (nestjs-durable). `prisma migrate dev` also emitted CREATE INDEX statements
-- for the partial indexes of the init migration (its schema engine did not recognise them in
-- the shadow database); those already exist and were removed from this file.

-- CreateIndex
CREATE INDEX "durable_runs_status_created_idx" ON "durable_runs"("status", "created_at");

-- CreateIndex
CREATE INDEX "durable_runs_workflow_created_idx" ON "durable_runs"("workflow_name", "created_at");

-- CreateIndex
CREATE INDEX "durable_runs_updated_idx" ON "durable_runs"("updated_at");

-- CreateIndex
CREATE INDEX "durable_runs_id_pattern_idx" ON "durable_runs"("id" text_pattern_ops);
