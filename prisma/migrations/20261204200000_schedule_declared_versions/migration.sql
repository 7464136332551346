-- nestjs-durable schema version 4: a declared schedule records the app versions that declared it, so
-- that during a rolling deploy an older version does not overwrite or delete the newer version's schedule.

-- AlterTable
ALTER TABLE "durable_schema" ALTER COLUMN "version" SET DEFAULT 4;

-- AlterTable
ALTER TABLE "durable_schedules" ADD COLUMN     "declared_versions" TEXT[] DEFAULT ARRAY[]::TEXT[];

