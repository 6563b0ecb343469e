import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { billingDayHeadline, renderBillingDay } from './billing-day-report.js';
import { renderReconciliation } from './reconciliation-report.js';
import type { ReconciliationFigures } from './reconciliation.js';
import type { BillingDaySection } from './billing-day-section.js';
import type { LatencyFigure } from './latency.js';
import type { PathCost } from './paths.js';
import type { CollectionRun, FloorRun } from './throughput.js';

/**
 * docs/benchmarks.md is generated from bench/results.json by this module, so the two cannot
 * disagree (test/bench/benchmarks-doc.test.ts fails when they do):
 *
 *   npx tsx bench/report.ts          # rewrite docs/benchmarks.md from bench/results.json
 */

interface ColdStartFigure {
  readonly name: string;
  readonly bytes: number;
  readonly importMs: number;
  readonly firstCallMs: number;
  readonly totalMs: number;
  readonly ratio?: number;
  /** Quartiles of the round-by-round ratios to the bare client (absent in results from before they were kept). */
  readonly roundRatios?: { readonly p25: number; readonly median: number; readonly p75: number };
}

/** The same-requests floor of one function (bench/cold-start.ts `SameRequestsFigure`). */
interface SameRequestsFigure extends ColdStartFigure {
  readonly requests: number;
  readonly waves: number;
  readonly ratio: number;
}

export interface BenchResults {
  readonly machine: { nproc: number; cpu?: string; memoryGiB: number; node: string; platform: string; loadavgAtStart?: number[]; loadavgAtEnd?: number[] };
  readonly startedAt: string;
  readonly finishedAt?: string;
  readonly options: { n: number; pairs: number; invocations: number; quick: boolean; billUpTo?: number };
  readonly logging?: string;
  readonly paths?: PathCost[];
  readonly throughput?: {
    subscriptions: number;
    pairs: { order: string; project: CollectionRun; floor: FloorRun; ratio: number }[];
    medianProjectSubsPerSecond: number;
    medianFloorSubsPerSecond: number;
    medianRatio: number;
    concurrency: { invocations: number; usersPerInvocation: number; batchSize: number };
  };
  readonly growth?: { due: number; waiting: number; project: CollectionRun; floor: FloorRun }[];
  readonly coldStart?: { method: string; runs: number; baseline: ColdStartFigure; baselineOneFile?: ColdStartFigure; functions: (ColdStartFigure & { sameRequests?: SameRequestsFigure })[]; target: number } | null;
  readonly coldStartError?: string;
  readonly latency?: LatencyFigure[];
  readonly billingDay?: BillingDaySection;
  readonly reconciliation?: readonly ReconciliationFigures[];
  /** The same section again at a smaller budget (`--day-key billingDayAtMachinePace`), aimed at what the bench machine's worker keeps up with. */
  readonly billingDayAtMachinePace?: BillingDaySection;
  /** Load average (1, 5, 15 min) at the start and end of each section. */
  readonly sectionLoad?: Record<string, { startedAt: string; start: number[]; end?: number[]; seconds?: number }>;
  /** Sections measured again later into the same results (`--merge`). */
  readonly remeasured?: { sections: string[]; startedAt: string; loadavgAtStart: number[] }[];
}

const ROOT = resolve(import.meta.dirname, '..');
export const RESULTS_FILE = join(ROOT, 'bench', 'results.json');
export const DOC_FILE = join(ROOT, 'docs', 'benchmarks.md');

function table(headers: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.map(String).join(' | ')} |`;
  return [line(headers), `|${headers.map(() => '---').join('|')}|`, ...rows.map(line)].join('\n');
}

const fmt = (x: number, digits = 2) => String(Math.round(x * 10 ** digits) / 10 ** digits);
const ratio = (a: number, b: number) => (b === 0 ? '-' : fmt(a / b));

/**
 * Whether a function's cold start meets the target: "yes" when even the upper quartile of its
 * round-by-round ratios is within it, "no" when even the lower quartile is above it, "at the line"
 * between. Without the rounds' quartiles, the median ratio alone answers yes or no.
 */
export function coldStartVerdict(median: number, rounds: { readonly p25: number; readonly p75: number } | undefined, target: number): 'yes' | 'no' | 'at the line' {
  if (!rounds) return median <= target ? 'yes' : 'no';
  if (rounds.p75 <= target) return 'yes';
  if (rounds.p25 > target) return 'no';
  return 'at the line';
}
const commands = (by: Record<string, number>) =>
  Object.entries(by)
    .map(([k, v]) => `${k} ${fmt(v)}`)
    .join(', ');

/** The figures as markdown tables (also printed by `npm run bench`). */
export function renderTables(r: BenchResults): string {
  const out: string[] = [];
  if (r.paths) {
    out.push('### Requests and request units per billed subscription, per path', '');
    out.push(
      `200 due pinless subscriptions per path through the handlers, every attempt approved. Lock heartbeats are counted apart (not in "requests"). Targets: scheduled, retry, batch 3; manual pay ≤ 4; operator retry ≤ 5; balance webhook ≤ 4. The GetItem fraction on the subscription paths is the billing-day limiter's share. The loan rows are per loan payment (200 each, approved). The loan paths read the user's instruments item with the payment in one TransactGetItems and write the presentment in the payment's own transaction (DESIGN 3.2), as the scheduled path does. A customer's loan payment: the payment (its Idempotency-Key) with the instruments item (TransactGetItems), the daily debit reservation (UpdateItem), the create and the outcome with its presentment (2 TransactWriteItems) = 4. An automatic loan retry: lock Put, the TransactGetItems, the outcome's TransactWriteItems with its presentment, lock Delete = 4. ACH adds one Query (the loan's recent payments, for holds recorded before instruments). Before, the instruments item was a GetItem and the presentment an UpdateItem of their own: 6 and 7. The RRU column does not price TransactGetItems (the meter has no case for it): DynamoDB bills 2 RRU per item up to 4 KB in one, so the loan paths' read is about 4 RRU where their two consistent GetItems were 2, as on the subscription paths.`,
      '',
    );
    out.push(
      table(
        ['path', 'billed', 'requests', 'by command', 'RRU', 'WRU', 'GSI WRU', 'heartbeats'],
        r.paths.map((p) => [p.path, `${p.billed}/${p.subscriptions}`, fmt(p.requestsPerSub), commands(p.byCommandPerSub), fmt(p.rruPerSub), fmt(p.wruPerSub), fmt(p.gsiWruPerSub), fmt(p.heartbeatsPerSub ?? 0)]),
      ),
      '',
    );
  }
  if (r.throughput) {
    const t = r.throughput;
    out.push('### Collection throughput: project against the floor, interleaved pairs', '');
    out.push(
      `${t.subscriptions} due subscriptions per run, ${t.pairs.length} pairs in one run, order alternating; both fed the same way (batches of ${t.concurrency.batchSize}, ${t.concurrency.invocations} batches at a time, ${t.concurrency.usersPerInvocation} subscriptions of a batch in flight). Project: collections-job → batch-worker, logging at info. Floor: the due-index Query, then lock Put, GetItem, one TransactWriteItems per subscription, no logging.`,
      '',
    );
    out.push(
      table(
        ['pair', 'order', 'project subs/s', 'floor subs/s', 'project ÷ floor', 'project billed', 'floor billed', 'project requests/sub', 'floor requests/sub', 'project client CPU ms/sub', 'floor client CPU ms/sub', 'log bytes/sub'],
        t.pairs.map((p, i) => [
          i + 1,
          p.order,
          fmt(p.project.subsPerSecond),
          fmt(p.floor.subsPerSecond),
          fmt(p.ratio),
          p.project.billed,
          p.floor.billed,
          fmt(p.project.perSub.requests),
          fmt(p.floor.perSub.requests),
          fmt(p.project.clientCpuMsPerSub),
          fmt(p.floor.clientCpuMsPerSub),
          p.project.logBytesPerSub,
        ]),
      ),
      '',
      `**Median: project ${fmt(t.medianProjectSubsPerSecond)} subs/s, floor ${fmt(t.medianFloorSubsPerSecond)} subs/s; median of the pair ratios ${fmt(t.medianRatio)}.**`,
      '',
    );
  }
  if (r.growth) {
    const base = r.growth.find((g) => g.due === 1000 && g.waiting === 0);
    out.push('### Planning growth: due work and waiting work', '');
    out.push(
      `The collections-job alone ("planning": every query it sends, gauges included), then the whole run (planning + billing; points with more than ${r.options.billUpTo ?? 1000} due records plan only, their billing scales as the throughput section shows). Waiting records: half FAILED inside their daily retry wait, a quarter parked on the failure ladder, a quarter with dunning exhausted. The floor reads only the due records (the due-index Query). "Items read" is what DynamoDB reads and bills (ScannedCount: a COUNT or filtered query reads items it does not return); "items returned" what came back.`,
      '',
    );
    out.push(
      table(
        ['due', 'waiting', 'enqueued', 'planning requests', 'items returned (project)', 'items read (project)', 'items read (floor)', 'items read per due record (project)', 'items read per due record (floor)', 'planning RRU per due record (project)', 'planning RRU per due record (floor)', 'planning ms per due record (project)', 'planning ms per due record (floor)', 'planning ms per due record ÷ 1k alone', 'run subs/s (project)', 'run subs/s (floor)', 'requests/sub (project)', 'RRU/sub', 'WRU/sub', 'GSI WRU/sub'],
        r.growth.map((g) => {
          const msPerDue = (g.project.planSeconds * 1000) / g.due;
          const baseMs = base ? (base.project.planSeconds * 1000) / base.due : msPerDue;
          const read = (p: { itemsRead: number; itemsScanned?: number }) => p.itemsScanned ?? p.itemsRead;
          return [
            g.due,
            g.waiting,
            g.project.enqueued,
            fmt(g.project.planning.requests),
            fmt(g.project.planning.itemsRead),
            fmt(read(g.project.planning)),
            fmt(read(g.floor.planning)),
            ratio(read(g.project.planning), g.due),
            ratio(read(g.floor.planning), g.due),
            fmt(g.project.planning.rru / g.due, 3),
            fmt(g.floor.planning.rru / g.due, 3),
            fmt(msPerDue, 3),
            fmt((g.floor.planSeconds * 1000) / g.due, 3),
            fmt(msPerDue / baseMs),
            g.project.billedRun === false ? 'planning only' : fmt(g.project.subsPerSecond),
            g.project.billedRun === false ? 'planning only' : fmt(g.floor.subsPerSecond),
            g.project.billedRun === false ? '-' : fmt(g.project.perSub.requests),
            g.project.billedRun === false ? '-' : fmt(g.project.perSub.rru),
            g.project.billedRun === false ? '-' : fmt(g.project.perSub.wru),
            g.project.billedRun === false ? '-' : fmt(g.project.perSub.gsiWru),
          ];
        }),
      ),
      '',
    );
  }
  if (r.coldStart !== undefined) {
    out.push('### Cold start per function against a bare DynamoDB client', '');
    if (r.coldStart === null) {
      out.push(r.coldStartError ? `Failed in this run: ${r.coldStartError}` : 'Not measured in this run.', '');
    } else {
      const c = r.coldStart;
      out.push(`${/median of \d+/i.test(c.method) ? c.method.replace(/\.?$/, '.') : `${c.method.replace(/\.?$/, '.')} Median of ${c.runs} rounds.`} Target: each function within ${c.target} × the bare client.`, '');
      out.push(
        table(
          ['function', 'KiB', 'import ms', 'first call ms', 'total ms', '× bare', 'rounds: × bare p25-p75', `within ${c.target} ×`],
          [c.baseline, ...c.functions].map((f) => [
            f.name,
            Math.round(f.bytes / 1024),
            fmt(f.importMs, 1),
            fmt(f.firstCallMs, 1),
            fmt(f.totalMs, 1),
            f === c.baseline ? '1' : fmt(f.ratio ?? f.totalMs / c.baseline.totalMs),
            f === c.baseline || !f.roundRatios ? '' : `${fmt(f.roundRatios.p25)}-${fmt(f.roundRatios.p75)}`,
            f === c.baseline ? '' : coldStartVerdict(f.ratio ?? f.totalMs / c.baseline.totalMs, f.roundRatios, c.target),
          ]),
        ),
        '',
        'A round runs every bundle once, so each round gives each function its own ratio to the bare client; "at the line" means the target lies between the quartiles of those ratios, where one run cannot say which side the function is on.',
        '',
      );
      const oneFile = c.baselineOneFile;
      if (oneFile) {
        out.push(
          `The bare client above is built as the functions are: the AWS SDK's credential providers for environments without credentials are side packages of the asset, never loaded in Lambda (lib/bundling.ts). The same client in one file, those providers inline (how every bundle was built before), took ${fmt(oneFile.totalMs, 1)} ms in the same rounds (import ${fmt(oneFile.importMs, 1)}, first call ${fmt(oneFile.firstCallMs, 1)}; ${Math.round(oneFile.bytes / 1024)} KiB), ${fmt(oneFile.totalMs / c.baseline.totalMs)} × the bare client. Each function against it:`,
          '',
          table(
            ['function', 'total ms', '× bare client in one file'],
            c.functions.map((f) => [f.name, fmt(f.totalMs, 1), fmt(f.totalMs / oneFile.totalMs)]),
          ),
          '',
        );
      }
      const same = c.functions.filter((f) => f.sameRequests);
      if (same.length > 0) {
        out.push(
          'Beside the verdict, a second floor per function: bare SDK clients making the same AWS requests as its first call, in the same waves (recorded through a proxy, replayed in the same rounds; `bench/request-replay.ts`). Its ratio is what our code costs on top of the work itself.',
          '',
          table(
            ['function', 'requests (waves)', 'floor KiB', 'floor total ms', 'floor × bare', 'function × floor'],
            same.map((f) => {
              const r = f.sameRequests!;
              return [f.name, `${r.requests} (${r.waves})`, Math.round(r.bytes / 1024), fmt(r.totalMs, 1), fmt(r.totalMs / c.baseline.totalMs), fmt(r.ratio)];
            }),
          ),
          '',
        );
      }
    }
  }
  if (r.latency) {
    out.push('### API latency (autocannon, loopback)', '');
    out.push(table(['request', 'connections', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'non-2xx'], r.latency.map((l) => [l.name, l.connections, fmt(l.rps, 0), l.p50, l.p99, l.requests, l.non2xx])), '');
  }
  if (r.reconciliation) out.push(...renderReconciliation(r.reconciliation, r.sectionLoad?.reconciliation?.start));
  if (r.billingDay) out.push(...renderBillingDay(r.billingDay));
  if (r.billingDayAtMachinePace) out.push(...renderBillingDay(r.billingDayAtMachinePace, 'at a smaller budget'));
  return out.join('\n');
}

const METHOD = `## Method

**Counting.** An SDK middleware on the DynamoDB client (step \`initialize\`, once per \`send\`, above
the SDK's retries) counts requests per command and prices each one the way on-demand DynamoDB
bills (\`bench/capacity.ts\`): GetItem 1 RRU per 4 KB strongly consistent, half eventually; Query
the summed size of the items read rounded up to 4 KB, 0.5 per 4 KB on a GSI (every item the key
condition reads, ScannedCount, also under a filter or \`Select: COUNT\`; the ones not returned priced
at the average size of the table's known items in that index); Put/Update/Delete 1 WRU
per KB of the larger of the old and new item (a failed condition is billed too); TransactWriteItems
2 WRU per KB per item; GSI writes 1 WRU per KB per index an item enters, leaves or changes in (2 when
its index key changes). Lock heartbeats (a lease renewal Put conditioned on the previous
\`record_version_number\`) are counted apart. The same middleware counts the items each read returns
and the items DynamoDB read for it. Item sizes are remembered from seeding too (not counted), so a
write prices the larger of the old and new item and its index moves as DynamoDB does.

**Paths.** 200 due pinless subscriptions per path through the handlers: scheduled and retry
through the batch-worker (SQS batches of 10), the balance webhook through the
webhook-balance-worker, manual pay and operator retry through the api handler.
\`test/adapters/dynamodb/requests-per-path.test.ts\` asserts the same counts in \`npm test\`.

**Throughput.** Each run seeds fresh tables, then times planning and billing. The project is
collections-job → in-memory queue → batch-worker with the production logger at \`info\`; the floor
is the least DynamoDB work that bills the same subscriptions: the due-index Query (all shards, pages
of 1,000), then per subscription the attempt's three requests (conditional lock Put, consistent
GetItem, one TransactWriteItems with record, history row, next period, its history row and the lock
delete), items built before the clock starts. Both are fed the same way (see the table). Both
sequences are warmed up on 500 subscriptions first (DynamoDB Local is a JVM); then the pairs run
interleaved, the order alternating, and the medians are reported. DynamoDB Local, the project and
the floor share the machine's cores, so absolute rates are this machine's, not Lambda's. The bench's
tables are created without the history table's stream: nothing here reads it, real DynamoDB bills
no request units for it, and DynamoDB Local keeps every stream record it ever wrote (across tables,
deleted ones included) and slows down as they pile up (five 1,000-subscription floor runs went from
38 to 11 attempts/s with the stream, flat without).

**Load.** Other agents share this machine; the load average at the start and end of each section is
in the table under "This run". A rate measured at a load above the core count (2) is a lower bound.

**Growth.** The same project and floor runs at 1,000 and 20,000 due records, and at 1,000 due with
19,000 waiting records in the table. The planner reads the sparse \`due-index\`, keyed on each open
record's next eligible instant (docs/design.md 2.1), so waiting records are never returned to it;
every status shares one partition per processor and shard (\`DUE#{processor}#n\`), each read as one stream of Queries of up
to 1,000 items (the floor's pages), the due loan retries alongside.
The same run's failing and dunning gauges (\`countFailing\`, \`countDunning\`) read counters kept
by the writes that move a record in or out of them (\`GAUGES#\`, docs/decisions.md): one Query each
of a few small items, whatever the table holds, so parked and exhausted records are not read for
them either. "Items read" against "items returned" shows what a filtered or COUNT query reads and
DynamoDB bills although it returns nothing.

**Cold start.** Supplied by \`bench/cold-start.ts\`: a fresh \`node\` process per bundle as the CDK
synthesizes it, import plus one first call, interleaved with a bare DynamoDB client's (one
GetItem: the verdict's floor) and with bare SDK clients replaying the function's own first-call
requests (the second floor: the work without our code). Secrets are given by ARN, as deployed: the
function reads them from Secrets Manager at cold start (one parallel round, src/runtime/secrets.ts),
here a local \`GetSecretValue\` on 127.0.0.1 (\`bench/local-secrets-manager.ts\`, reached through the
SDK's own \`AWS_ENDPOINT_URL_SECRETS_MANAGER\`), so the Secrets Manager client and its round are in
the figure, and the second floor replays those reads too. The bare client has no secrets.

**Not part of \`npm test\`.** The bench runs only through \`npm run bench\`; \`npm test\` checks only that
this file is what \`bench/report.ts\` renders from \`bench/results.json\`.
`;

function sectionLoadTable(r: BenchResults): string {
  const entries = Object.entries(r.sectionLoad ?? {});
  if (entries.length === 0) return '';
  const rows = entries.map(([name, l]) => [name, l.startedAt.slice(11, 19), l.seconds ?? '?', l.start.join(' / '), l.end?.join(' / ') ?? '?']);
  const again = (r.remeasured ?? []).map((m) => `${m.sections.join(', ')} measured again at ${m.startedAt.slice(11, 19)} UTC into these results (load ${m.loadavgAtStart.join(' / ')}).`);
  return `\n${table(['section', 'started (UTC)', 'seconds', 'load average at start (1 / 5 / 15 min)', 'at end'], rows)}\n${again.length > 0 ? `\n${again.join(' ')}\n` : ''}`;
}

/** The whole of docs/benchmarks.md. */
/** The figures a reader wants first, each against its goal; the sections below have the detail. */
function headline(r: BenchResults): string {
  const rows: string[][] = [];
  if (r.paths?.length) rows.push(['DynamoDB requests per billed subscription, by path', r.paths.map((p) => `${fmt(p.requestsPerSub)} (${p.path})`).join('; '), 'the floor is 3: lock, read, one transaction']);
  const t = r.throughput;
  if (t) rows.push(['Collections throughput against the bare-client floor', `${fmt(t.medianRatio)} (${fmt(t.medianProjectSubsPerSecond)} vs ${fmt(t.medianFloorSubsPerSecond)} subs/s, median of ${t.pairs.length} pairs)`, 'near 1; noisy on 2 shared cores']);
  const widest = r.growth?.reduce((a, b) => (b.waiting > a.waiting ? b : a));
  if (widest) {
    const read = widest.project.planning.itemsScanned ?? widest.project.planning.itemsRead;
    rows.push(['Planning cost with work waiting', `${ratio(read, widest.due)} items read per due record at ${widest.due} due and ${widest.waiting} waiting`, 'about 1: planning grows with due work only']);
  }
  const c = r.coldStart;
  if (c) {
    const ratios = c.functions.map((f) => f.ratio ?? f.totalMs / c.baseline.totalMs);
    rows.push(['Cold start (import and first call) against the bare client', `${fmt(Math.min(...ratios))}× to ${fmt(Math.max(...ratios))}×`, `${fmt(c.target)}×`]);
  } else rows.push(['Cold start against the bare client', 'not measured in this run', '']);
  for (const l of r.latency ?? []) rows.push([`Local latency: ${l.name}`, `p50 ${l.p50} ms, p99 ${l.p99} ms at ${l.rps} requests/s`, '']);
  if (r.billingDay) rows.push(billingDayHeadline(r.billingDay));
  if (r.billingDayAtMachinePace) rows.push(billingDayHeadline(r.billingDayAtMachinePace, 'at a smaller budget'));
  return `## Headline\n\n${table(['measure', 'figure', 'goal'], rows)}\n`;
}

export function renderDocument(r: BenchResults): string {
  const m = r.machine;
  return `# Benchmarks

<!-- Generated by \`npx tsx bench/report.ts\` from bench/results.json; do not edit by hand. -->

${headline(r)}
\`npm run bench\` (\`tsx bench/run.ts\`) measures what a billed subscription costs, how fast the system
bills against the floor, how planning grows, and cold starts. It starts its own DynamoDB Local and
fresh tables, prints the tables below and writes \`bench/results.json\`; \`npx tsx bench/report.ts\`
renders this file from it.

\`\`\`sh
npm run bench                                  # everything, 5-8 minutes on 2 cores at low load
npm run bench -- --only coldstart --merge      # measure one section again into bench/results.json
npm run bench -- --quick                       # growth without the 20k point
npm run bench -- --only throughput --pairs 7 --n 3000
npx tsx bench/report.ts                        # docs/benchmarks.md from bench/results.json
\`\`\`

## This run

${r.startedAt} to ${r.finishedAt ?? '?'}; ${m.nproc} × ${m.cpu ?? '?'}, ${m.memoryGiB} GiB, Node ${m.node} (${m.platform}); load average ${m.loadavgAtStart?.join(' / ') ?? '?'} at the start, ${m.loadavgAtEnd?.join(' / ') ?? '?'} at the end (other agents share this machine). Options: ${r.options.n} subscriptions per throughput run, ${r.options.pairs} pairs, ${r.options.invocations} invocations${r.options.quick ? ', quick' : ''}. Logging: ${r.logging ?? 'silent'}.
${sectionLoadTable(r)}
${renderTables(r)}
${METHOD}`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const results = JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as BenchResults;
  writeFileSync(DOC_FILE, renderDocument(results));
  console.error(`wrote ${DOC_FILE}`);
}
