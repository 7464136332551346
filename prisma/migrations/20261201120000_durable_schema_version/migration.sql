-- nestjs-durable schema version 2: the durable_* tables record their version, as the DEFAULT of
-- durable_schema.version (the table stays empty), so the module can tell at startup whether the
-- database is older or newer than the library. Later versions change it with ALTER COLUMN … SET DEFAULT.

-- CreateTable
CREATE TABLE "durable_schema" (
    "version" INTEGER NOT NULL DEFAULT 2,

    CONSTRAINT "durable_schema_pkey" PRIMARY KEY ("version")
);
