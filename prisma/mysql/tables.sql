-- The example app's tables on MariaDB (the models of app.prisma). The durable_* tables come from
-- the package's schema.mysql.sql.
CREATE TABLE orders (
  id VARCHAR(64) NOT NULL,
  customer VARCHAR(200) NOT NULL,
  email VARCHAR(320) NOT NULL,
  sku VARCHAR(100) NOT NULL,
  quantity INT NOT NULL,
  amount INT NOT NULL,
  status VARCHAR(32) NOT NULL DEFAULT 'NEW',
  charge_id VARCHAR(200) NULL,
  failure_reason TEXT NULL,
  tracking_number VARCHAR(200) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE stock (
  sku VARCHAR(100) NOT NULL,
  unit_price INT NOT NULL DEFAULT 0,
  available INT NOT NULL,
  reserved INT NOT NULL DEFAULT 0,
  PRIMARY KEY (sku)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE outbox_emails (
  id VARCHAR(64) NOT NULL,
  order_id VARCHAR(64) NOT NULL,
  kind VARCHAR(64) NOT NULL,
  `to` VARCHAR(320) NOT NULL,
  subject VARCHAR(500) NOT NULL DEFAULT '',
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  sent_at DATETIME(3) NULL,
  PRIMARY KEY (id),
  UNIQUE INDEX outbox_emails_order_id_kind_key (order_id, kind),
  INDEX outbox_emails_unsent_idx (sent_at, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
