-- nestjs-durable: upgrades the durable_* tables on MariaDB (or MySQL) from schema version 6 to 7.
-- Version 7: groups of children started by Durable.startChildren() (a fan-out), counted on one row
-- per group, each child's place in its group, and the order in which the children ended.

ALTER TABLE durable_runs
  ADD COLUMN group_seq INT NULL AFTER parent_id,
  ADD COLUMN group_index INT NULL AFTER group_seq,
  ADD INDEX durable_runs_group_idx (parent_id, group_seq, group_index);

CREATE TABLE durable_child_groups (
  run_id VARCHAR(256) NOT NULL,
  seq INT NOT NULL,
  workflow VARCHAR(200) NOT NULL,
  total INT NOT NULL,
  created INT NOT NULL DEFAULT 0,
  ended INT NOT NULL DEFAULT 0,
  succeeded INT NOT NULL DEFAULT 0,
  failed INT NOT NULL DEFAULT 0,
  cancelled INT NOT NULL DEFAULT 0,
  wake_at INT NOT NULL DEFAULT 0,
  ends INT NOT NULL DEFAULT 0,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (run_id, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE durable_group_ends (
  run_id VARCHAR(256) NOT NULL,
  seq INT NOT NULL,
  ord INT NOT NULL,
  child_index INT NOT NULL,
  status VARCHAR(16) NOT NULL,
  error JSON NULL,
  PRIMARY KEY (run_id, seq, ord)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

ALTER TABLE durable_schema ALTER COLUMN version SET DEFAULT 7;
