/**
 * npm run bench -- telemetry [--workflows 2000] [--steps 3] [--callers 20] [--concurrency 50] [--rounds 3]
 *                            [--starts 2000] [--sdk traces|metrics|both] [--sample 1] [--step-query] [--modes off,on]
 *                            [--pg-url URL] [--out FILE]
 * The cost of OpenTelemetry: the same workload with no SDK registered ("off": the engine's
 * telemetry calls meet the API's no-ops) and with the official SDK registered the way an app does
 * it ("on": a BatchSpanProcessor whose exporter drops the spans after counting them, standing in
 * for an OTLP exporter without a network; a MeterProvider with a reader collecting every second,
 * which runs the gauges' figures query), side by side, rounds alternating off/on on a fresh engine.
 *
 * end to end: `--workflows` runs of `--steps` trivial steps, each started by one of `--callers`
 *   concurrent callers inside a span of its own ("on": the HTTP request's span; the run stores its
 *   traceparent and every execution and step exports a span), until all have finished: workflows/s,
 *   start latency p50/p99, and this process's CPU ms per workflow.
 * start: `--starts` sequential startRun calls onto a queue nobody serves (the insert path alone,
 *   in a span when "on"): calls/s and p50/p99.
 * --sdk traces|metrics|both (default both): which half of the SDK "on" registers, to see what each costs.
 * --sample R (default 1): the ratio of requests traced (ParentBased(TraceIdRatioBased(R)), as production
 * setups sample); the runs and steps of an unsampled request make no recording span.
 * --step-query: each step INSERTs one row through a pool of its own (a step with a small real query,
 *   instead of a trivial one), to see how real step work dilutes the SDK's cost.
 * --modes off,on (default): the modes each round runs, in this order. A third mode, "app": the SDK
 *   registered and each start in a request span as "on", but the engine's own telemetry switched off
 *   (engine option telemetry { traces: false, metrics: false }): what OpenTelemetry costs the app
 *   without this library's spans and metrics, so "app" vs "on" is the library's share
 *   (`--modes off,app,on`). `--modes on` with `node --cpu-prof` profiles one mode alone (the
 *   warm-up round is always off).
 * Uses the database <db-prefix>_telemetry (default bench_telemetry; dropped at the end).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { benchDbUrl, dropDatabase, recreateDatabase, withClient } from './db.js';
import { createSchema, OursHost, UNSERVED_QUEUE, WORKFLOW } from './peers/ours-lib.js';
import { percentile } from './stats.js';
import { PG_URL_OPTION, positiveInt } from './cli-args.js';

type Mode = 'off' | 'app' | 'on';
type Parts = 'traces' | 'metrics' | 'both';

/** Counts what would be exported, then drops it. */
class CountingExporter {
  spans = 0;
  metricExports = 0;
  readonly spanExporter: SpanExporter = {
    export: (spans, done) => {
      this.spans += spans.length;
      done({ code: 0 });
    },
    shutdown: async () => {},
  };
  readonly metricExporter: PushMetricExporter = {
    export: (_m, done) => {
      this.metricExports++;
      done({ code: 0 });
    },
    forceFlush: async () => {},
    shutdown: async () => {},
  };
}

/** Registers the SDK globally (mode on); returns how to take it down again. */
function registerSdk(parts: Parts, sample: number): { counts: CountingExporter; shutdown: () => Promise<void> } {
  const counts = new CountingExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new BatchSpanProcessor(counts.spanExporter)],
    // The usual production setup: a ratio of the root spans (the requests), their children follow.
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(sample) }),
  });
  const meterProvider = new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: counts.metricExporter, exportIntervalMillis: 1_000 })],
  });
  // The context manager @opentelemetry/sdk-node's NodeSDK registers by default (not AsyncHooksContextManager, which costs more).
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  if (parts !== 'metrics') trace.setGlobalTracerProvider(tracerProvider);
  if (parts !== 'traces') metrics.setGlobalMeterProvider(meterProvider);
  return {
    counts,
    shutdown: async () => {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
      trace.disable();
      metrics.disable();
      context.disable();
    },
  };
}

interface Round {
  mode: Mode;
  workflowsPerSec: number;
  startP50Ms: number;
  startP99Ms: number;
  cpuMsPerWorkflow: number;
  startsPerSec: number;
  startOnlyP50Ms: number;
  startOnlyP99Ms: number;
  spansExported: number;
}

export async function runTelemetryBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      workflows: { type: 'string', default: '2000' },
      steps: { type: 'string', default: '3' },
      callers: { type: 'string', default: '20' },
      concurrency: { type: 'string', default: '50' },
      rounds: { type: 'string', default: '3' },
      starts: { type: 'string', default: '2000' },
      sdk: { type: 'string', default: 'both' },
      sample: { type: 'string', default: '1' },
      'step-query': { type: 'boolean', default: false },
      modes: { type: 'string', default: 'off,on' },
      'pg-url': PG_URL_OPTION,
      out: { type: 'string', default: fileURLToPath(new URL('../results/telemetry.json', import.meta.url)) },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (a.help) {
    process.stdout.write(
      'usage: npm run bench -- telemetry [--workflows 2000] [--steps 3] [--callers 20] [--concurrency 50] [--rounds 3] [--starts 2000]\n' +
        '                                  [--sdk traces|metrics|both] [--sample 1] [--step-query] [--modes off,on] [--pg-url URL] [--out FILE]\n',
    );
    return;
  }
  const o = {
    workflows: positiveInt('workflows', a.workflows),
    steps: positiveInt('steps', a.steps),
    callers: positiveInt('callers', a.callers),
    concurrency: positiveInt('concurrency', a.concurrency),
    rounds: positiveInt('rounds', a.rounds),
    starts: positiveInt('starts', a.starts),
    sdk: a.sdk as Parts,
    sample: Number(a.sample),
    stepQuery: a['step-query']!,
  };
  const modes = a.modes!.split(',') as Mode[];
  if (!modes.length || modes.some((m) => !['off', 'app', 'on'].includes(m)))
    throw new Error(`--modes must list off, app, on, got ${a.modes}`);
  if (!(o.sample > 0 && o.sample <= 1)) throw new Error(`--sample must be a ratio in (0, 1], got ${a.sample}`);
  if (!['traces', 'metrics', 'both'].includes(o.sdk)) throw new Error(`--sdk must be traces, metrics or both, got ${a.sdk}`);
  const url = benchDbUrl(a['pg-url']!, 'telemetry');
  await recreateDatabase(url);
  await createSchema(url);
  const rounds: Round[] = [];
  try {
    await runRound(url, 'off', { ...o, workflows: Math.min(500, o.workflows), starts: Math.min(300, o.starts) }); // warm-up
    for (let r = 0; r < o.rounds; r++) {
      for (const mode of modes) {
        const round = await runRound(url, mode, o);
        rounds.push(round);
        process.stderr.write(
          `round ${r + 1} ${mode}: ${round.workflowsPerSec.toFixed(0)} wf/s, start p50 ${round.startP50Ms.toFixed(2)} ms, ` +
            `${round.cpuMsPerWorkflow.toFixed(2)} CPU ms/wf, ${round.startsPerSec.toFixed(0)} starts/s, ${round.spansExported} spans\n`,
        );
      }
    }
  } finally {
    await dropDatabase(url);
  }
  const report = summarize(rounds);
  process.stdout.write(report.text);
  mkdirSync(dirname(a.out!), { recursive: true });
  writeFileSync(a.out!, JSON.stringify({ options: o, rounds, summary: report.summary }, null, 2));
}

async function runRound(
  url: string,
  mode: Mode,
  o: {
    workflows: number;
    steps: number;
    callers: number;
    concurrency: number;
    starts: number;
    sdk: Parts;
    sample: number;
    stepQuery: boolean;
  },
): Promise<Round> {
  await withClient(url, (c) => c.query('TRUNCATE durable_runs, durable_steps, durable_run_events, bench_step_write CASCADE'));
  const sdk = mode === 'off' ? null : registerSdk(o.sdk, o.sample);
  let done = 0;
  let allDone!: () => void;
  const finished = new Promise<void>((r) => (allDone = r));
  const host = new OursHost(
    {
      url,
      steps: o.steps,
      concurrency: o.concurrency,
      dbWrite: o.stepQuery,
      worker: true,
      history: true,
      poolSize: 20,
      telemetry: mode !== 'app',
    },
    () => {
      if (++done === o.workflows) allDone();
    },
  );
  await host.start();
  const tracer = trace.getTracer('bench');
  const inSpan = <T>(name: string, fn: () => Promise<T>): Promise<T> =>
    sdk && o.sdk !== 'metrics' ? tracer.startActiveSpan(name, (span) => fn().finally(() => span.end())) : fn();
  try {
    // End to end: callers start runs, each in a span of its own when on.
    const latencies: number[] = [];
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: o.callers }, async () => {
        while (next < o.workflows) {
          const i = next++;
          const s = performance.now();
          await inSpan('POST /orders', () => host.engine.startRun(WORKFLOW, `w${i}`));
          latencies.push(performance.now() - s);
        }
      }),
    );
    await finished;
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    // Start alone: sequential inserts onto a queue nobody serves.
    const startLat: number[] = [];
    const s0 = performance.now();
    for (let i = 0; i < o.starts; i++) {
      const s = performance.now();
      await inSpan('POST /orders', () => host.engine.startRun(WORKFLOW, `s${i}`, { queue: UNSERVED_QUEUE }));
      startLat.push(performance.now() - s);
    }
    const startSeconds = (performance.now() - s0) / 1000;
    latencies.sort((x, y) => x - y);
    startLat.sort((x, y) => x - y);
    await host.stop();
    const spans = sdk ? (await sdk.shutdown(), sdk.counts.spans) : 0;
    return {
      mode,
      workflowsPerSec: o.workflows / seconds,
      startP50Ms: percentile(latencies, 50),
      startP99Ms: percentile(latencies, 99),
      cpuMsPerWorkflow: (cpu.user + cpu.system) / 1000 / o.workflows,
      startsPerSec: o.starts / startSeconds,
      startOnlyP50Ms: percentile(startLat, 50),
      startOnlyP99Ms: percentile(startLat, 99),
      spansExported: spans,
    };
  } catch (err) {
    await host.stop().catch(() => {});
    await sdk?.shutdown();
    throw err;
  }
}

function summarize(rounds: Round[]): { text: string; summary: Partial<Record<Mode, Record<string, number>>> } {
  const median = (xs: number[]) =>
    percentile(
      [...xs].sort((x, y) => x - y),
      50,
    );
  const keys: Array<[keyof Round, string]> = [
    ['workflowsPerSec', 'end to end: workflows/s'],
    ['startP50Ms', 'end to end: start p50 ms'],
    ['startP99Ms', 'end to end: start p99 ms'],
    ['cpuMsPerWorkflow', 'end to end: CPU ms/workflow (this process)'],
    ['startsPerSec', 'start alone: calls/s'],
    ['startOnlyP50Ms', 'start alone: p50 ms'],
    ['startOnlyP99Ms', 'start alone: p99 ms'],
    ['spansExported', 'spans exported per round'],
  ];
  const modes = (['off', 'app', 'on'] as const).filter((m) => rounds.some((r) => r.mode === m));
  // The changes shown: each mode against off, and on against app (the library's own share) when both ran.
  const pairs: Array<[Mode, Mode]> = [];
  for (const m of modes) if (m !== 'off' && modes.includes('off')) pairs.push([m, 'off']);
  if (modes.includes('app') && modes.includes('on')) pairs.push(['on', 'app']);
  const summary: Partial<Record<Mode, Record<string, number>>> = {};
  const n = rounds.filter((r) => r.mode === modes[0]).length;
  const lines = ['', `telemetry ${modes.join(' vs ')} (median of ${n} rounds each)`, ''];
  lines.push('figure'.padEnd(44) + modes.map((m) => m.padStart(10)).join('') + pairs.map(([x, y]) => `${x} vs ${y}`.padStart(12)).join(''));
  const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(2));
  for (const [k, label] of keys) {
    const value = {} as Record<Mode, number>;
    for (const m of modes) (summary[m] ??= {})[k] = value[m] = median(rounds.filter((r) => r.mode === m).map((r) => r[k] as number));
    const changes = pairs.map(([x, y]) =>
      k === 'spansExported' || !value[y] ? '' : `${(((value[x] - value[y]) / value[y]) * 100).toFixed(1)} %`,
    );
    lines.push(label.padEnd(44) + modes.map((m) => fmt(value[m]).padStart(10)).join('') + changes.map((c) => c.padStart(12)).join(''));
  }
  // Rounds run the modes one after the other, so each round's modes share the machine's load of the moment:
  // the median of the per-round changes is steadier than the change of the medians on a shared machine.
  lines.push('', 'per-round changes (median over rounds of each round against its own)');
  for (const [k, label] of keys.filter(([key]) => key === 'workflowsPerSec' || key === 'cpuMsPerWorkflow')) {
    const changes = pairs.map(([x, y]) => {
      const xs = rounds.filter((r) => r.mode === x);
      const ys = rounds.filter((r) => r.mode === y);
      const each = xs.map((r, i) => ((r[k] as number) - (ys[i][k] as number)) / (ys[i][k] as number)).filter(Number.isFinite);
      return each.length ? `${(median(each) * 100).toFixed(1)} %` : '';
    });
    lines.push(label.padEnd(44) + ''.padStart(10 * modes.length) + changes.map((c) => c.padStart(12)).join(''));
  }
  return { text: lines.join('\n') + '\n', summary };
}
