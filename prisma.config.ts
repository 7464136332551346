import { defineConfig } from 'prisma/config';

// DATABASE_URL selects the database for `prisma migrate`; without it the commands target the
// local development database used by the example app and the tests.
export default defineConfig({
  schema: 'prisma/schema',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/durable_dev' },
});
