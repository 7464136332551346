-- nestjs-durable: upgrades the durable_* tables on MariaDB (or MySQL) from schema version 5 to 6.
-- Version 6: the chunks a run writes to its streams (Durable.stream).

CREATE TABLE durable_stream_chunks (
  run_id VARCHAR(256) NOT NULL,
  stream VARCHAR(256) NOT NULL,
  position INT NOT NULL,
  origin VARCHAR(128) NOT NULL,
  value JSON NULL,
  is_end TINYINT(1) NOT NULL DEFAULT 0,
  written_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (run_id, stream, position),
  UNIQUE KEY durable_stream_chunks_origin_key (run_id, origin)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

ALTER TABLE durable_schema ALTER COLUMN version SET DEFAULT 6;
