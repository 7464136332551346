/** The secret the test worker processes (worker-app.ts) sign callback URLs with: a test's client engine verifies with it. */
export const WORKER_CALLBACK_SECRET = 'worker-app-callback-secret-of-at-least-32-bytes';
