import type { ResolvedEngineOptions } from '../config/options.js';
import type { VersionInFlightRow } from '../store/admin-versions.js';

/** One app version with runs in flight: how many, in which status, of which workflows, since when. */
export interface VersionInFlight {
  /** null: runs started without an app version (every worker claims them). */
  appVersion: string | null;
  inFlight: number;
  pending: number;
  running: number;
  waiting: number;
  workflows: Array<{ workflow: string; inFlight: number }>;
  /** When the oldest of these runs was created. */
  oldestCreatedAt: string;
}

/** GET versions: the versions with runs in flight (oldest first), and what this instance is and claims. */
export function assembleVersions(rows: VersionInFlightRow[], options: ResolvedEngineOptions) {
  const by = new Map<string | null, VersionInFlight>();
  for (const r of rows) {
    let v = by.get(r.appVersion);
    if (!v) {
      v = { appVersion: r.appVersion, inFlight: 0, pending: 0, running: 0, waiting: 0, workflows: [], oldestCreatedAt: r.oldest };
      by.set(r.appVersion, v);
    }
    v.inFlight += r.n;
    if (r.status === 'PENDING') v.pending += r.n;
    else if (r.status === 'RUNNING') v.running += r.n;
    else v.waiting += r.n;
    if (r.oldest < v.oldestCreatedAt) v.oldestCreatedAt = r.oldest;
    const w = v.workflows.find((x) => x.workflow === r.workflow);
    if (w) w.inFlight += r.n;
    else v.workflows.push({ workflow: r.workflow, inFlight: r.n });
  }
  const versions = [...by.values()].sort((a, b) => a.oldestCreatedAt.localeCompare(b.oldestCreatedAt));
  for (const v of versions) v.workflows.sort((a, b) => b.inFlight - a.inFlight || a.workflow.localeCompare(b.workflow));
  return {
    /** The app version of this instance (engine option appVersion). */
    appVersion: options.appVersion,
    /** The versions whose runs this instance claims (option runVersions); null: every run. */
    claims: options.runVersions,
    versions,
  };
}
