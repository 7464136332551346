-- AlterTable
ALTER TABLE "orders" ADD COLUMN     "charge_id" TEXT,
ADD COLUMN     "failure_reason" TEXT,
ADD COLUMN     "tracking_number" TEXT;

-- AlterTable
ALTER TABLE "stock" ADD COLUMN     "unit_price" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "outbox_emails" ADD COLUMN     "sent_at" TIMESTAMPTZ(3),
ADD COLUMN     "subject" TEXT NOT NULL DEFAULT '';

-- CreateIndex
CREATE INDEX "outbox_emails_unsent_idx" ON "outbox_emails"("created_at") WHERE (sent_at IS NULL);

