import { appendFileSync } from 'node:fs';
import * as fc from 'fast-check';
import { describe, it } from 'vitest';
import { COUNTERS, PROFILE, commandArbitraries, initialPlansArbitrary } from './commands.js';
import { BillingWorld, sharedApp } from './harness.js';
import { RAIL_STATS } from './rails.js';

/**
 * The reference-model test over every path (DESIGN 10): random sequences of membership events,
 * collections runs, manual pay, retry-billing, bulk retry runs (their items delivered later, once
 * or twice), waive, due-date changes, ACH and Stripe outcomes, processor outcome changes (and a
 * member driven until parked or exhausted, so a run has work to select), clock moves, duplicate and reordered deliveries and injected crashes,
 * for a few members at once, on DynamoDB Local through the real handlers. After every step the
 * system's records and the processor's charges are compared with the reference model
 * (test/model/reference-model.ts); at the end of each sequence the books settle and every
 * accepted charge must be on a record.
 *
 * Budget knobs (environment): MODEL_RUNS (sequences), MODEL_STEPS (commands per sequence at
 * most), MODEL_USERS (members per sequence, 2-4), MODEL_SEED (replay a run), MODEL_PATH (replay a
 * shrunk counterexample with the seed), MODEL_SHRINK=0 (report the first failure unshrunk).
 * A failure prints the seed, the path and the failing command list.
 *
 * Long runs: MODEL_TOTAL_STEPS=n runs batches of MODEL_RUNS sequences with fresh seeds until n steps
 * ran (or MODEL_DEADLINE, an ISO instant, passed), does not stop at a failure, and appends every
 * counterexample (seed, path, commands, violations) and the totals to MODEL_REPORT.
 */

const RUNS = Number(process.env.MODEL_RUNS ?? 20);
const STEPS = Number(process.env.MODEL_STEPS ?? 40);
const USERS = Number(process.env.MODEL_USERS ?? 3);
/** npm test runs a fixed seed (a stable budget, never a flaky main); MODEL_SEED picks another, the long run explores. */
const SEED = process.env.MODEL_SEED !== undefined ? Number(process.env.MODEL_SEED) : undefined;
const DEFAULT_SEED = 20261201;
const PATH = process.env.MODEL_PATH;
const TOTAL_STEPS = Number(process.env.MODEL_TOTAL_STEPS ?? 0);
const REPORT = process.env.MODEL_REPORT ?? '/tmp/model-long-run.md';

/**
 * Paths that hit a known bug that is assigned and being fixed (issue 9, model-findings.md): the
 * commands avoid exactly that path while its name is here. Shrink this list as the fixes land.
 */
export const KNOWN_BUGS: ReadonlyMap<string, string> = new Map<string, string>([]);

/** MODEL_KNOWN=a,b overrides the guarded list (MODEL_KNOWN= with nothing: no guard at all). */
const KNOWN: ReadonlySet<string> = process.env.MODEL_KNOWN !== undefined ? new Set(process.env.MODEL_KNOWN.split(',').filter(Boolean)) : new Set(KNOWN_BUGS.keys());

/** The network ceilings (visa.*, mastercard.*) are judged; MODEL_CEILINGS=0 leaves them out. */
const CEILINGS = process.env.MODEL_CEILINGS !== '0';

let settleMs = 0;

function property() {
  return fc.asyncProperty(
    fc.integer({ min: 0, max: 364 }),
    initialPlansArbitrary(USERS),
    fc.commands(commandArbitraries({ users: USERS, exclude: new Set() }), { maxCommands: STEPS, size: 'max' }),
    async (startDay, joins, commands) => {
      const { app, recorder } = await sharedApp();
      const start = new Date(Date.UTC(2026, 11, 1, 9) + startDay * 86_400_000).toISOString();
      const world = new BillingWorld(app, recorder, USERS, start);
      world.known = KNOWN;
      world.ceilings = CEILINGS;
      await fc.asyncModelRun(() => ({ model: world.model, real: world }), [...joins, ...commands]);
      const s0 = performance.now();
      await world.settle();
      settleMs += performance.now() - s0;
    },
  );
}

function printProfile(): void {
  if (!process.env.MODEL_PROFILE) return;
  console.table(RAIL_STATS);
  console.table(Object.fromEntries(Object.entries(PROFILE).map(([k, v]) => [k, { n: v.n, act_ms: Math.round(v.act / v.n), check_ms: Math.round(v.check / v.n) }])));
}

describe('billing reference model', () => {
  // Either the fixed-budget property (npm test) or, with MODEL_TOTAL_STEPS, the long run.
  if (TOTAL_STEPS === 0) it(
    `charges, records and audit rows agree with what each member owes, over ${RUNS} sequences of up to ${STEPS} steps`,
    async () => {
      const started = Date.now();
      const before = COUNTERS.steps;
      await fc.assert(property(), {
        numRuns: RUNS,
        seed: SEED ?? DEFAULT_SEED,
        ...(PATH !== undefined ? { path: PATH } : {}),
        ...(process.env.MODEL_SHRINK === '0' ? { endOnFailure: true } : {}),
        verbose: 1,
      });
      printProfile();
      console.log(`model: ${RUNS} sequences, ${COUNTERS.steps - before} steps in ${((Date.now() - started) / 1000).toFixed(1)} s (settling ${(settleMs / 1000).toFixed(1)} s)`);
    },
    Number(process.env.MODEL_TIMEOUT_MS ?? 20 * 60_000),
  );

  if (TOTAL_STEPS > 0) it(
    `long run: at least ${TOTAL_STEPS} steps, every counterexample reported`,
    async () => {
      const started = Date.now();
      const deadline = process.env.MODEL_DEADLINE ? Date.parse(process.env.MODEL_DEADLINE) : Number.POSITIVE_INFINITY;
      let batch = 0;
      let failures = 0;
      let sequences = 0;
      const base = SEED ?? Math.floor(Math.random() * 2 ** 30);
      appendFileSync(REPORT, `\n# long run started ${new Date().toISOString()} (base seed ${base}, ${RUNS} sequences per batch, up to ${STEPS} steps, ${USERS} members)\n`);
      while (COUNTERS.steps < TOTAL_STEPS && Date.now() < deadline) {
        const seed = base + batch;
        batch += 1;
        const out = await fc.check(property(), { numRuns: RUNS, seed, endOnFailure: true });
        sequences += out.numRuns;
        if (out.failed) {
          failures += 1;
          const error = String((out.errorInstance as Error | undefined)?.message ?? "").split("\n").slice(0, 8).join("\n    ");
          appendFileSync(REPORT, `\n## failure ${failures}: seed ${seed}, path "${out.counterexamplePath}"\n- commands: ${fc.stringify(out.counterexample)}\n- ${error}\n`);
        }
        appendFileSync(REPORT, `- batch ${batch} (seed ${seed}): ${COUNTERS.steps} steps, ${sequences} sequences, ${failures} failing batches, ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
      }
      appendFileSync(REPORT, `\n**total: ${COUNTERS.steps} steps in ${sequences} sequences, ${failures} failing batches, ${((Date.now() - started) / 60000).toFixed(1)} min**\n`);
      printProfile();
    },
    24 * 3_600_000,
  );
});
