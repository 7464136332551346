import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { workloadRuns, type ChaosSettings } from './chaos-config.js';
import { rng } from '../support/rng.js';
import type { Fleet, FleetWorker } from './chaos-fleet.js';

/** Something the driver did, with its time (Date.now()); the report explains the damage by these. */
export interface ChaosEvent {
  kind: 'kill' | 'freeze' | 'thaw' | 'pg-restart';
  at: number;
  /** freeze: when it was continued; pg-restart (any outage, a shard move too): when the database answered again. */
  end?: number;
  pid?: number;
  workerId?: string;
  /** Runs the worker held when it was hit (from durable_runs.lease_owner, sampled just before). */
  held?: number;
}

/** How far the workload is, as the driver sees it (sampled by the caller). */
export interface Progress {
  finished: number;
  /** Unfinished runs leased per worker id. */
  leased: Map<string, number>;
}

/** Restarts the local Postgres cluster (the one the tests use). */
export async function restartPostgres(): Promise<void> {
  const version = readdirSync('/etc/postgresql')[0];
  await promisify(execFile)('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart'], { timeout: 120_000 });
}

/** How far the chaos is (by runs finished or by time) when the kills settings.minKills asks for are all done. */
const FORCED_KILLS_BY = 0.35;

/** How long past its duration the chaos goes on to make the kills, zombies and outage its settings owe. */
const OWED_GRACE_MS = 60_000;

/**
 * For settings.durationS (or until the workload is done; up to OWED_GRACE_MS more for what is still owed): SIGKILLs a random worker every
 * ~killEveryS seconds and starts a replacement; freezes `zombies` workers past their lease and
 * continues them later; restarts Postgres once when about 40 % of the runs are done (after the
 * kills minKills asks for, all made by FORCED_KILLS_BY). One action at a time (a zombie's SIGCONT comes from a timer).
 */
export class ChaosDriver {
  readonly events: ChaosEvent[] = [];
  private readonly random: () => number;
  private stopped = false;
  private readonly thawTimers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly fleet: Fleet,
    private readonly s: ChaosSettings,
    private readonly progress: () => Progress,
    /** Cuts the workers off the database (restart, proxy or failover outage); resolves once it answers again. */
    private readonly outage: () => Promise<void>,
    private readonly log: (line: string) => void,
  ) {
    this.random = rng(s.seed + 1);
  }

  count(kind: ChaosEvent['kind']): number {
    return this.events.filter((e) => e.kind === kind).length;
  }

  stop(): void {
    this.stopped = true;
  }

  async run(): Promise<void> {
    const t0 = Date.now();
    const end = t0 + this.s.durationS * 1000;
    const nextGap = () => this.s.killEveryS * 1000 * (0.5 + this.random());
    let nextKill = this.s.killEveryS > 0 ? t0 + nextGap() : Infinity;
    let zombiesDone = 0;
    let restarted = this.s.outage === 'none';
    // Until the workload is done and every action the settings ask for was made (a workload that
    // finished first still has its schedule's runs in flight), or the time is up.
    const owed = () => this.count('kill') < this.s.minKills || !restarted || zombiesDone < this.s.zombies;
    // Past the time, only what is still owed, for a while: on a loaded machine a replacement worker
    // can take as long to boot as the chaos lasts, and the outage would never come.
    const timeLeft = () => Date.now() < end || (owed() && Date.now() < end + OWED_GRACE_MS);
    while (!this.stopped && timeLeft() && (this.progress().finished < workloadRuns(this.s) || owed())) {
      const done = this.progress().finished / workloadRuns(this.s);
      // How far the chaos is: by finished runs, or by time when runs finish late (children queue behind the backlog).
      const stage = Math.max(done, (Date.now() - t0) / (end - t0));
      // The kills minKills asks for, due by 35 % and before the outage: a workload that finishes
      // while the outage or a replacement's start is awaited would otherwise end with too few.
      const killsDue = Math.min(this.s.minKills, Math.floor((stage / FORCED_KILLS_BY) * this.s.minKills));
      if (!restarted && this.count('kill') >= killsDue && (done >= 0.4 || Date.now() >= t0 + (end - t0) / 2)) {
        restarted = true;
        await this.restart();
        nextKill = Math.max(nextKill, Date.now() + 1_000);
      } else if (zombiesDone < this.s.zombies && stage >= 0.1 + (0.6 * zombiesDone) / this.s.zombies) {
        if (this.freeze()) zombiesDone++;
      } else if (Date.now() >= nextKill || this.count('kill') < killsDue) {
        await this.killOne();
        nextKill = Date.now() + nextGap();
      }
      await this.maintain();
      await delay(100);
    }
  }

  /** Replaces crashed workers (a crash is a violation; the run goes on with P workers). */
  async maintain(): Promise<void> {
    const alive = this.fleet.all.filter((w) => w.state === 'running' || w.state === 'frozen').length;
    for (let i = alive; i < this.s.workers && !this.stopped; i++) {
      const r = await this.fleet.spawn();
      this.log(`worker ${r.pid} started to replace a crashed one`);
    }
  }

  /** Continues every frozen worker now (end of the chaos). */
  thawAll(): void {
    for (const t of this.thawTimers) clearTimeout(t);
    this.thawTimers.clear();
    for (const e of this.events) if (e.kind === 'freeze' && e.end === undefined) this.thaw(e);
  }

  private pick(): FleetWorker | undefined {
    const live = this.fleet.running();
    return live.length ? live[Math.floor(this.random() * live.length)] : undefined;
  }

  private async killOne(): Promise<void> {
    const w = this.pick();
    if (!w) return;
    const held = this.progress().leased.get(w.workerId) ?? 0;
    this.fleet.kill(w);
    this.events.push({ kind: 'kill', at: Date.now(), pid: w.pid, workerId: w.workerId, held });
    this.log(`SIGKILL worker ${w.pid} (holding ~${held} runs); starting a replacement`);
    const r = await this.fleet.spawn();
    this.log(`replacement worker ${r.pid} ready`);
  }

  private freeze(): boolean {
    if (this.fleet.running().length < 2) return false;
    const w = this.pick()!;
    const held = this.progress().leased.get(w.workerId) ?? 0;
    this.fleet.freeze(w);
    const e: ChaosEvent = { kind: 'freeze', at: Date.now(), pid: w.pid, workerId: w.workerId, held };
    this.events.push(e);
    this.log(`SIGSTOP worker ${w.pid} (holding ~${held} runs) for ${this.s.zombieStopMs} ms: a zombie past its lease`);
    const t = setTimeout(() => {
      this.thawTimers.delete(t);
      this.thaw(e);
    }, this.s.zombieStopMs);
    this.thawTimers.add(t);
    return true;
  }

  private thaw(e: ChaosEvent): void {
    const w = this.fleet.byPid(e.pid!);
    if (!w || w.state !== 'frozen') return;
    this.fleet.thaw(w);
    e.end = Date.now();
    this.events.push({ kind: 'thaw', at: e.end, pid: w.pid, workerId: w.workerId });
    this.log(`SIGCONT worker ${w.pid}: the zombie wakes up and must not write`);
  }

  private async restart(): Promise<void> {
    const e: ChaosEvent = { kind: 'pg-restart', at: Date.now() };
    this.events.push(e);
    this.log(
      this.s.outage === 'restart'
        ? this.s.database === 'mariadb'
          ? 'restarting MariaDB (shutdown, then mariadbd-safe)…'
          : 'restarting Postgres (pg_ctlcluster restart)…'
        : this.s.outage === 'failover'
          ? `failing over: killing the primary, promoting its standby (${this.s.replication} replication)…`
          : this.s.outage === 'shard-move'
            ? 'moving a partition to the other worker node, its runs in flight (Citus)…'
            : `cutting the workers off the database for ${this.s.outageMs} ms (proxy)…`,
    );
    await this.outage();
    e.end = Date.now();
    this.log(`the database is back after ${((e.end - e.at) / 1000).toFixed(1)} s`);
  }
}
