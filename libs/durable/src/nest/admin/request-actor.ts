/** Who is asking, from the request the admin guards let through: recorded in a run's history. */
export type ActorResolver = (request: unknown) => string | null | undefined;

const MAX_ACTOR = 200;
const USER_FIELDS = ['id', 'sub', 'username', 'email', 'name'] as const;

/**
 * The default: the request's `user` (what Passport and most auth guards set), as a string, or its
 * first present field of id, sub, username, email, name. "admin API" when there is none.
 */
export const defaultActor: ActorResolver = (request) => {
  const user = (request as { user?: unknown } | null)?.user;
  if (typeof user === 'string' || typeof user === 'number') return String(user);
  if (user && typeof user === 'object') {
    for (const f of USER_FIELDS) {
      const v = (user as Record<string, unknown>)[f];
      if (typeof v === 'string' || typeof v === 'number') return String(v);
    }
  }
  return null;
};

/** The actor to record: the resolver's answer, trimmed to 200 characters, or "admin API". */
export function requestActor(resolve: ActorResolver, request: unknown): string {
  let who: unknown;
  try {
    who = resolve(request);
  } catch {
    who = null;
  }
  const text = typeof who === 'string' ? who.trim().slice(0, MAX_ACTOR) : '';
  return text || 'admin API';
}
