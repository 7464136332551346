/**
 * A run and its descendants, for cancel and resume in distributed mode. On a single server the cancel statements
 * find the tree with a recursive CTE; Citus refuses recursive CTEs on a distributed schema's tables.
 * There the tree is read first, level by level (children live in their parent's partition), and the
 * statement takes it as an array instead: its `WITH RECURSIVE tree AS (…)` replaced by the ids.
 */
import { statement, type Statement } from './statement.js';
import type { Store } from './store.js';

/** The children of runs $1 (index durable_runs_parent_idx). */
const CHILDREN_OF = statement('children_of', `SELECT id FROM durable_runs WHERE parent_id = ANY($1::text[])`);

/** Run `id` and, with `cascade`, every descendant of it in its partition (the store's), the root first. */
export async function runTree(store: Store, id: string, cascade: boolean): Promise<string[]> {
  const tree = [id];
  const seen = new Set(tree);
  for (let level = [id]; cascade && level.length;) {
    const rows = await store.sql.query<{ id: string }>(CHILDREN_OF, [level]);
    level = rows.map((r) => r.id).filter((c) => !seen.has(c));
    for (const c of level) seen.add(c);
    tree.push(...level);
  }
  return tree;
}

/** Run $1 if it can be resumed (CANCELLED or FAILED): when it finished, and the database clock. */
const RESUMABLE_ROOT = statement(
  'resumable_root',
  `SELECT finished_at, now() AS clock FROM durable_runs WHERE id = $1 AND status IN ('CANCELLED','FAILED')`,
);

/** The children of runs $1 cancelled with them: CANCELLED at or after $2, when the resumed run ended (as RESUME_RUN's tree). */
const CANCELLED_CHILDREN_OF = statement(
  'cancelled_children_of',
  `SELECT id FROM durable_runs WHERE parent_id = ANY($1::text[]) AND status = 'CANCELLED' AND finished_at >= $2::timestamptz`,
);

/**
 * Run `id` and, with `cascade`, the descendants cancelled with it (in its partition, the store's), as
 * RESUME_RUN's recursive tree finds them; null if the run cannot be resumed.
 */
export async function resumableTree(store: Store, id: string, cascade: boolean): Promise<{ tree: string[]; clock: Date } | null> {
  const [root] = await store.sql.query<{ finished_at: Date | null; clock: Date }>(RESUMABLE_ROOT, [id]);
  if (!root) return null;
  const tree = [id];
  const seen = new Set(tree);
  for (let level = [id]; cascade && level.length;) {
    const rows = await store.sql.query<{ id: string }>(CANCELLED_CHILDREN_OF, [level, root.finished_at]);
    level = rows.map((r) => r.id).filter((c) => !seen.has(c));
    for (const c of level) seen.add(c);
    tree.push(...level);
  }
  return { tree, clock: root.clock };
}

const RECURSIVE_TREE =
  /^\s*WITH RECURSIVE tree AS \(\s*SELECT id FROM durable_runs WHERE id = \$1\s*UNION\s*SELECT c\.id FROM durable_runs c JOIN tree t ON c\.parent_id = t\.id WHERE (\$\d+)::boolean\),/;

/** `s` with its recursive tree replaced by the ids in parameter $`param` (text[]); named `<name>_listed`. */
export function listedTree(s: Statement, param: number): Statement {
  if (!RECURSIVE_TREE.test(s.text)) throw new Error(`statement ${s.name} does not start with the recursive tree listedTree replaces`);
  // The cascade flag stays in the text (always true: the caller read the tree with it) so its parameter keeps its type.
  return statement(
    `${s.name.replace(/^durable_/, '')}_listed`,
    s.text.replace(
      RECURSIVE_TREE,
      (_, cascade: string) => `\nWITH tree AS (SELECT id FROM unnest($${param}::text[]) AS t(id) WHERE ${cascade}::boolean IS NOT NULL),`,
    ),
  );
}
