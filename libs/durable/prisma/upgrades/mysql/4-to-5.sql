-- nestjs-durable: upgrades the durable_* tables on MariaDB (or MySQL) from schema version 4 to 5.
-- Version 5: a run keeps the app's context it was started in (engine option `context`).

ALTER TABLE durable_runs ADD COLUMN context JSON NULL AFTER traceparent;

ALTER TABLE durable_schema ALTER COLUMN version SET DEFAULT 5;
