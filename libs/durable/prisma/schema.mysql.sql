-- nestjs-durable schema version 6 for MariaDB 10.6+ (and MySQL 8, untested): the durable_* tables.
-- Apply it once to the app's database (`mariadb app < schema.mysql.sql`, or as a migration of your own);
-- durable.mysql.prisma describes the same tables to Prisma.
-- Every text column compares byte for byte (utf8mb4_bin): run ids, keys and topics are case-sensitive,
-- as on PostgreSQL. Times are DATETIME(3) in UTC, written from the database clock (UTC_TIMESTAMP(3)).
-- The claim indexes lead with (queue, status): a claim reads exactly the claimable rows, in order,
-- where PostgreSQL uses partial indexes; durable_runs_running_idx also hands a limited claim each
-- concurrency key's runs in claim order. Run it with row-based binary logging (SKIP LOCKED is unsafe
-- for statement-based replication).

CREATE TABLE durable_runs (
  id VARCHAR(256) NOT NULL,
  workflow_name VARCHAR(200) NOT NULL,
  queue VARCHAR(200) NOT NULL DEFAULT 'default',
  status VARCHAR(16) NOT NULL DEFAULT 'PENDING',
  input JSON NULL,
  output JSON NULL,
  error JSON NULL,
  priority INT NOT NULL DEFAULT 0,
  available_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  order_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  lease_owner VARCHAR(256) NULL,
  lease_expires_at DATETIME(3) NULL,
  lease_epoch INT NOT NULL DEFAULT 0,
  attempt INT NOT NULL DEFAULT 0,
  parent_id VARCHAR(256) NULL,
  group_seq INT NULL,
  group_index INT NULL,
  app_version VARCHAR(200) NULL,
  deadline_at DATETIME(3) NULL,
  schedule_id VARCHAR(256) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  started_at DATETIME(3) NULL,
  finished_at DATETIME(3) NULL,
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  cancel_requested_at DATETIME(3) NULL,
  progress JSON NULL,
  concurrency_key VARCHAR(256) NULL,
  traceparent VARCHAR(200) NULL,
  context JSON NULL,
  tags JSON NULL,
  dedupe_key VARCHAR(256) NULL,
  debounce_key VARCHAR(256) NULL,
  debounce_until DATETIME(3) NULL,
  -- A singleton's key while its run is active, and a debounce key while its run has not started:
  -- the unique indexes on these stand in for PostgreSQL's partial unique indexes.
  dedupe_active VARCHAR(256) AS (CASE WHEN status IN ('PENDING', 'RUNNING', 'WAITING') THEN dedupe_key END) STORED,
  debounce_pending VARCHAR(256) AS (CASE WHEN status = 'PENDING' AND started_at IS NULL THEN debounce_key END) STORED,
  PRIMARY KEY (id),
  UNIQUE INDEX durable_runs_dedupe_idx (workflow_name, dedupe_active),
  UNIQUE INDEX durable_runs_debounce_idx (workflow_name, debounce_pending),
  INDEX durable_runs_claim_idx (queue, status, priority, order_at, available_at),
  INDEX durable_runs_wake_idx (queue, status, available_at),
  INDEX durable_runs_lease_idx (status, lease_expires_at),
  INDEX durable_runs_running_idx (queue, status, concurrency_key, priority, order_at, available_at),
  INDEX durable_runs_deadline_idx (deadline_at),
  INDEX durable_runs_finished_idx (finished_at),
  INDEX durable_runs_created_idx (created_at),
  INDEX durable_runs_parent_idx (parent_id),
  INDEX durable_runs_group_idx (parent_id, group_seq, group_index),
  INDEX durable_runs_status_created_idx (status, created_at),
  INDEX durable_runs_workflow_created_idx (workflow_name, created_at),
  INDEX durable_runs_updated_idx (updated_at),
  INDEX durable_runs_schedule_idx (schedule_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE durable_steps (
  run_id VARCHAR(256) NOT NULL,
  seq INT NOT NULL,
  name VARCHAR(200) NOT NULL,
  status VARCHAR(16) NOT NULL,
  output JSON NULL,
  error JSON NULL,
  attempts INT NOT NULL DEFAULT 1,
  started_at DATETIME(3) NULL,
  finished_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  compensation JSON NULL,
  compensates INT NULL,
  PRIMARY KEY (run_id, seq),
  CONSTRAINT durable_steps_run_id_fkey FOREIGN KEY (run_id) REFERENCES durable_runs (id) ON DELETE CASCADE ON UPDATE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per tag of a run, written with the run: the admin API's tag filter reads it (MariaDB has
-- no index over a JSON array; PostgreSQL has a GIN index on durable_runs.tags).
CREATE TABLE durable_run_tags (
  tag VARCHAR(100) NOT NULL,
  run_id VARCHAR(256) NOT NULL,
  PRIMARY KEY (tag, run_id),
  INDEX durable_run_tags_run_id_idx (run_id),
  CONSTRAINT durable_run_tags_run_id_fkey FOREIGN KEY (run_id) REFERENCES durable_runs (id) ON DELETE CASCADE ON UPDATE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE durable_messages (
  id BIGINT NOT NULL AUTO_INCREMENT,
  run_id VARCHAR(256) NOT NULL,
  topic VARCHAR(256) NOT NULL,
  payload JSON NULL,
  idempotency_key VARCHAR(256) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  consumed_seq INT NULL,
  consumed_at DATETIME(3) NULL,
  traceparent VARCHAR(200) NULL,
  PRIMARY KEY (id),
  UNIQUE INDEX durable_messages_idempotency_key (run_id, idempotency_key),
  INDEX durable_messages_pending_idx (run_id, topic, consumed_seq, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE durable_events (
  run_id VARCHAR(256) NOT NULL,
  `key` VARCHAR(256) NOT NULL,
  value JSON NULL,
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (run_id, `key`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE durable_run_events (
  id BIGINT NOT NULL AUTO_INCREMENT,
  run_id VARCHAR(256) NOT NULL,
  kind VARCHAR(64) NOT NULL,
  detail JSON NULL,
  at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  INDEX durable_run_events_run_idx (run_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

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

CREATE TABLE durable_hook_cursors (
  consumer VARCHAR(200) NOT NULL,
  last_event_id BIGINT NOT NULL,
  owner VARCHAR(256) NULL,
  lease_expires_at DATETIME(3) NULL,
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (consumer)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The version of these tables is the DEFAULT of this column (the table stays empty).
CREATE TABLE durable_schema (
  version INT NOT NULL DEFAULT 7,
  PRIMARY KEY (version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE durable_schedules (
  id VARCHAR(256) NOT NULL,
  workflow_name VARCHAR(200) NOT NULL,
  source VARCHAR(16) NOT NULL DEFAULT 'runtime',
  cron VARCHAR(200) NOT NULL,
  time_zone VARCHAR(64) NOT NULL DEFAULT 'UTC',
  input JSON NULL,
  catch_up VARCHAR(16) NOT NULL DEFAULT 'latest',
  catch_up_window_ms BIGINT NOT NULL DEFAULT 86400000,
  overlap VARCHAR(16) NOT NULL DEFAULT 'skip',
  jitter_ms INT NOT NULL DEFAULT 0,
  paused BOOLEAN NOT NULL DEFAULT FALSE,
  next_fire_at DATETIME(3) NOT NULL,
  buffered_slot DATETIME(3) NULL,
  last_run_id VARCHAR(256) NULL,
  last_slot_at DATETIME(3) NULL,
  last_fired_at DATETIME(3) NULL,
  revision INT NOT NULL DEFAULT 0,
  declared_versions JSON NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  INDEX durable_schedules_due_idx (paused, next_fire_at, id),
  INDEX durable_schedules_workflow_idx (workflow_name, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE durable_queue_limits (
  queue VARCHAR(200) NOT NULL,
  global_concurrency INT NULL,
  key_concurrency INT NULL,
  source VARCHAR(16) NOT NULL DEFAULT 'runtime',
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  rr_key VARCHAR(256) NULL,
  rate_limit INT NULL,
  rate_period_ms INT NULL,
  key_rate_limit INT NULL,
  key_rate_period_ms INT NULL,
  PRIMARY KEY (queue)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE durable_rate_windows (
  queue VARCHAR(200) NOT NULL,
  `key` VARCHAR(256) NOT NULL,
  starts JSON NOT NULL,
  last_start_at DATETIME(3) NOT NULL,
  PRIMARY KEY (queue, `key`),
  INDEX durable_rate_windows_last_idx (last_start_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
