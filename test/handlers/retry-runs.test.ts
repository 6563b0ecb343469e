import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { retryBilling } from '../../src/domain/use-cases/retry-billing.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createCollectionsJobHandler } from '../../src/handlers/collections-job.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createRetryRunWorkerHandler } from '../../src/handlers/retry-run-worker.js';
import { attemptDepsOf } from '../../src/handlers/shared/attempt-deps.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, scheduledEvent, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord, callerFor, holdLock, instantAt, type Caller } from './api-fixtures.js';
import { operatorAuth } from '../support/http-events.js';
import { RUN_CLAIM_STALE_MS } from '../../src/domain/retry-runs.js';
import { commandsSent } from '../support/write-counter.js';
import { DAY } from '../support/time.js';

/**
 * Bulk retry runs (DESIGN 8) on DynamoDB Local: POST /v1/billing/retry-runs selects from the
 * indexes and stores the run, the retry-run-worker runs retry-billing per item from the queue,
 * GET reads it back. Charges are counted on the payment simulator.
 */

const NOW = '2026-12-01T12:00:00.000Z';
const ROUTE = '/v1/billing/retry-runs';

let app: TestApp;
let call: Caller;
let worker: ReturnType<typeof createRetryRunWorkerHandler>;

beforeEach(async () => {
  app = await createTestApp({ label: 'retryruns', now: NOW });
  call = callerFor(app);
  worker = createRetryRunWorkerHandler(app.depsFor('retry-run-worker'));
});

function parkedRecord(overrides: Partial<BillingRecord> = {}): BillingRecord {
  const due = instantAt(app, -5 * DAY);
  return billingRecord(app, {
    billing_date: due,
    billing_failed_for: `${due}#0`,
    billing_failure_count: 8,
    billing_failed_at: instantAt(app, -DAY),
    billing_last_error: 'The payment processor is unavailable.',
    ...overrides,
  });
}

function exhaustedRecord(overrides: Partial<BillingRecord> = {}): BillingRecord {
  return billingRecord(app, {
    billing_date: instantAt(app, -20 * DAY),
    billing_status: 'FAILED',
    payment_attempts: 1,
    first_attempt_date: instantAt(app, -20 * DAY),
    last_attempt_date: instantAt(app, -20 * DAY),
    payment_error: 'Your card has expired.',
    decline_code: 'expired_card',
    decline_class: 'update_payment_method',
    dunning_first_declined_at: instantAt(app, -20 * DAY),
    dunning_attempts: 1,
    ...overrides,
  });
}

const retryingRecord = () =>
  parkedRecord({ billing_failure_count: 2, billing_next_attempt_at: instantAt(app, 3_600_000) });

/** `key: null` sends no Idempotency-Key. */
function post(body: unknown, key: string | null = randomUUID()) {
  return call('POST', { route: ROUTE, body, ...(key !== null ? { headers: { 'Idempotency-Key': key } } : {}) });
}

function getRun(runId: string, query?: Record<string, string>) {
  return call('GET', { route: `${ROUTE}/{runId}`, pathParameters: { runId }, ...(query ? { query } : {}) });
}

/** The messages the API sent and not yet delivered, as SQS records (message ids kept for redelivery). */
function takeMessages() {
  const records = app.retryRunsQueue.sent.map((m) => sqsRecord(m.body, { messageId: randomUUID(), queue: 'test-retry-runs' }));
  app.retryRunsQueue.clear();
  return records;
}

/** Delivers records in batches of 10 until none is reported (at most `rounds` deliveries each). */
async function drain(records = takeMessages(), rounds = 3) {
  let pending = records;
  for (let round = 0; round < rounds && pending.length > 0; round++) {
    const failed: typeof pending = [];
    for (let i = 0; i < pending.length; i += 10) {
      const batch = pending.slice(i, i + 10);
      const response = await worker(sqsEvent(batch), lambdaContext());
      const ids = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
      failed.push(...batch.filter((r) => ids.has(r.messageId)));
    }
    pending = failed;
  }
  return pending;
}

const chargesOf = (users: readonly BillingRecord[]) => {
  const ids = new Set(users.map((u) => u.user_id));
  return app.simulator.charges().filter((c) => ids.has(c.user_id));
};

async function periodOf(record: BillingRecord): Promise<BillingRecord> {
  return (await app.deps.billing.get(record))!;
}

describe('POST /v1/billing/retry-runs', () => {
  it('a dry run selects the parked periods from the failing index, stores the run and charges nothing', async () => {
    const parked = await seedRecords(app, parkedRecord(), parkedRecord(), parkedRecord());
    await seedRecords(app, retryingRecord(), billingRecord(app), exhaustedRecord());

    const created = await post({ state: 'parked', reason: 'processor outage over', dry_run: true });

    expect(created.status, JSON.stringify(created.body)).toBe(202);
    expect(created.body).toMatchObject({ dry_run: true, selected: 3, status: 'done', replayed: false, counts: { billed: 0, failed: 0, still_due: 0, skipped: 0 } });
    expect(created.body.items.map((i: any) => i.subscription_id).sort()).toEqual(parked.map((p) => p.subscription_id).sort());
    expect(app.retryRunsQueue.sent).toHaveLength(0);
    expect(app.simulator.charges()).toHaveLength(0);
    for (const p of parked) expect(await periodOf(p)).toEqual(p);

    const read = await getRun(created.body.run_id);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ run_id: created.body.run_id, status: 'done', dry_run: true, selected: 3, actor: 'operator-1', reason: 'processor outage over' });
    expect(read.body.items.map((i: any) => i.outcome)).toEqual(['selected', 'selected', 'selected']);
  });

  it('a real run bills each parked period once, with actor, reason and run_id on the audit rows; counts and items match', async () => {
    const parked = await seedRecords(app, ...Array.from({ length: 12 }, () => parkedRecord()));
    await seedRecords(app, retryingRecord());

    const created = await post({ state: 'parked', reason: 'processor outage over' });
    expect(created.status).toBe(202);
    expect(created.body).toMatchObject({ selected: 12, status: 'running', dry_run: false });
    expect(app.retryRunsQueue.sent).toHaveLength(12);
    expect(await drain()).toEqual([]);

    expect(chargesOf(parked)).toHaveLength(12);
    for (const p of parked) {
      expect((await periodOf(p)).billing_status).toBe('COMPLETED');
      const rows = (await app.deps.billing.history(p.subscription_id)).items;
      const runRows = rows.filter((r) => r.run_id === created.body.run_id);
      // The clear and the attempt, both audited as the operator's, with the run's reason.
      expect(runRows.length).toBe(2);
      for (const row of runRows) expect(row).toMatchObject({ actor: 'operator-1', reason: 'processor outage over', process: 'OPERATOR_RETRY' });
    }
    const read = await getRun(created.body.run_id);
    expect(read.body).toMatchObject({ status: 'done', selected: 12, counts: { billed: 12, failed: 0, still_due: 0, skipped: 0 } });
    expect(read.body.items).toHaveLength(12);
    expect(read.body.items.every((i: any) => i.outcome === 'billed' && i.detail === 'collected')).toBe(true);

    // The history endpoint shows the run id too.
    const history = await call('GET', { route: '/v1/subscriptions/{subscriptionId}/history', pathParameters: { subscriptionId: parked[0]!.subscription_id } });
    expect(history.body.items.some((r: any) => r.run_id === created.body.run_id)).toBe(true);
  });

  it('a replay with the same key answers the same run and charges nothing more; another body with that key is 422', async () => {
    const parked = await seedRecords(app, parkedRecord(), parkedRecord());
    const body = { state: 'parked', reason: 'processor outage over' };
    const first = await post(body, 'run-key-1');
    await drain();
    expect(chargesOf(parked)).toHaveLength(2);

    const replay = await post({ reason: 'processor outage over', state: 'parked' }, 'run-key-1');
    expect(replay.status).toBe(202);
    expect(replay.body).toMatchObject({ run_id: first.body.run_id, replayed: true, selected: 2, status: 'done', counts: { billed: 2 } });
    expect(replay.body.items).toEqual(first.body.items);
    expect(app.retryRunsQueue.sent).toHaveLength(0);

    const reused = await post({ ...body, dry_run: true }, 'run-key-1');
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe('idempotency_key_reused');
    expect(app.retryRunsQueue.sent).toHaveLength(0);
    expect(chargesOf(parked)).toHaveLength(2);
  });

  it('the same key from another operator is another run', async () => {
    await seedRecords(app, parkedRecord());
    const mine = await post({ state: 'parked', reason: 'r', dry_run: true }, 'shared-key');
    const theirs = await call('POST', { route: ROUTE, body: { state: 'parked', reason: 'r', dry_run: true }, headers: { 'Idempotency-Key': 'shared-key' }, auth: { ...operatorAuth, sub: 'operator-2' } });
    expect(theirs.status).toBe(202);
    expect(theirs.body.run_id).not.toBe(mine.body.run_id);
    expect(theirs.body.replayed).toBe(false);
  });

  it('a run whose messages could not be sent is completed by its replay, and still bills each period once', async () => {
    const parked = await seedRecords(app, parkedRecord(), parkedRecord(), parkedRecord());
    app.retryRunsQueue.failNext = 1;
    const failed = await post({ state: 'parked', reason: 'outage over' }, 'run-key-crash');
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(app.retryRunsQueue.sent).toHaveLength(0);

    const replay = await post({ state: 'parked', reason: 'outage over' }, 'run-key-crash');
    expect(replay.status).toBe(202);
    expect(replay.body).toMatchObject({ replayed: true, selected: 3 });
    expect(app.retryRunsQueue.sent).toHaveLength(3);
    expect(await drain()).toEqual([]);
    expect(chargesOf(parked)).toHaveLength(3);
    expect((await getRun(replay.body.run_id)).body).toMatchObject({ status: 'done', counts: { billed: 3 } });
  });

  it('a run whose creation was interrupted says so on GET until a replay finishes it', async () => {
    const parked = await seedRecords(app, parkedRecord(), parkedRecord());
    app.retryRunsQueue.failNext = 1;
    const failed = await post({ state: 'parked', reason: 'outage over' }, 'run-key-interrupted');
    expect(failed.status).toBeGreaterThanOrEqual(500);
    const run = await app.deps.retryRuns.findByKey(operatorAuth.sub!, 'run-key-interrupted');
    expect(run?.phase).toBe('selected');

    // The request that created it might still be at it: not yet interrupted.
    expect((await getRun(run!.run_id)).body).toMatchObject({ status: 'running', creation: 'in_progress', selected: 2 });
    app.clock.advance(RUN_CLAIM_STALE_MS);
    const stuck = await getRun(run!.run_id);
    expect(stuck.body).toMatchObject({ status: 'running', creation: 'interrupted', counts: { billed: 0 } });
    expect(stuck.body.items.map((i: any) => i.outcome)).toEqual(['pending', 'pending']);
    expect(app.retryRunsQueue.sent).toHaveLength(0);

    const replay = await post({ state: 'parked', reason: 'outage over' }, 'run-key-interrupted');
    expect(replay.body).toMatchObject({ run_id: run!.run_id, replayed: true, creation: 'complete' });
    expect((await getRun(run!.run_id)).body.creation).toBe('complete');
    await drain();
    expect(chargesOf(parked)).toHaveLength(2);
    expect((await getRun(run!.run_id)).body).toMatchObject({ status: 'done', creation: 'complete', counts: { billed: 2 } });
  });

  it('a dry run and a run whose messages went out are complete at once', async () => {
    await seedRecords(app, parkedRecord());
    const dry = await post({ state: 'parked', reason: 'r', dry_run: true });
    expect(dry.body.creation).toBe('complete');
    expect((await getRun(dry.body.run_id)).body.creation).toBe('complete');
    const real = await post({ state: 'parked', reason: 'r' });
    expect(real.body.creation).toBe('complete');
    expect((await getRun(real.body.run_id)).body.creation).toBe('complete');
  });

  it('selects exhausted dunning periods from the dunning index and retries them (the schedule restarts)', async () => {
    const exhausted = await seedRecords(app, exhaustedRecord(), exhaustedRecord());
    await seedRecords(app, parkedRecord(), exhaustedRecord({ decline_class: 'retry_later', decline_code: 'insufficient_funds', dunning_next_attempt_at: instantAt(app, DAY) }));

    const created = await post({ state: 'exhausted', reason: 'card updater ran' });
    expect(created.body.selected).toBe(2);
    expect(created.body.items.map((i: any) => i.subscription_id).sort()).toEqual(exhausted.map((e) => e.subscription_id).sort());
    await drain();
    expect(chargesOf(exhausted)).toHaveLength(2);
    for (const e of exhausted) expect((await periodOf(e)).billing_status).toBe('COMPLETED');
  });

  it('user_ids narrows the selection to those users, and limit caps it', async () => {
    const parked = await seedRecords(app, parkedRecord(), parkedRecord(), parkedRecord(), parkedRecord());
    const named = await post({ state: 'parked', reason: 'r', dry_run: true, user_ids: [parked[0]!.user_id, parked[2]!.user_id, 'nobody-here'] });
    expect(named.body.items.map((i: any) => i.user_id).sort()).toEqual([parked[0]!.user_id, parked[2]!.user_id].sort());
    const capped = await post({ state: 'parked', reason: 'r', dry_run: true, limit: 3 });
    expect(capped.body.selected).toBe(3);
  });

  it('a held period is skipped with its hold code and charged nothing (DESIGN 3.1)', async () => {
    const unauthorized = parkedRecord({ payment_method: 'ach', ach_unauthorized: true, ach_return_code: 'R10' });
    const disputed = parkedRecord({ payment_method: 'card', card_disputed: true });
    const fine = parkedRecord();
    await seedRecords(app, unauthorized, disputed, fine);

    const created = await post({ state: 'parked', reason: 'outage over' });
    await drain();
    expect(chargesOf([unauthorized, disputed])).toHaveLength(0);
    expect(chargesOf([fine])).toHaveLength(1);
    const read = await getRun(created.body.run_id);
    expect(read.body.counts).toEqual({ billed: 1, failed: 0, still_due: 0, skipped: 2 });
    const bySub = new Map(read.body.items.map((i: any) => [i.subscription_id, i]));
    expect(bySub.get(unauthorized.subscription_id)).toMatchObject({ outcome: 'skipped', detail: 'ach_authorization_required' });
    expect(bySub.get(disputed.subscription_id)).toMatchObject({ outcome: 'skipped', detail: 'card_disputed' });
    // Nothing changed on the held periods: still parked.
    expect((await periodOf(unauthorized)).billing_failure_count).toBe(8);
  });

  it('a retry that fails again is counted failed, with the new failure saved', async () => {
    const broken = parkedRecord();
    await seedRecords(app, broken);
    app.simulator.configure({ default: 'approve', users: { [broken.user_id]: 'error' } });
    const created = await post({ state: 'parked', reason: 'outage over' });
    await drain();
    const read = await getRun(created.body.run_id);
    expect(read.body.counts).toEqual({ billed: 0, failed: 1, still_due: 0, skipped: 0 });
    expect(await periodOf(broken)).toMatchObject({ billing_status: 'PENDING', billing_failure_count: 1 });
  });

  it('pages the items of a large run', async () => {
    await seedRecords(app, ...Array.from({ length: 5 }, () => parkedRecord()));
    const created = await post({ state: 'parked', reason: 'r', dry_run: true });
    const first = await getRun(created.body.run_id, { limit: '2' });
    expect(first.body.items).toHaveLength(2);
    expect(first.body.next).toEqual(expect.any(String));
    const seen = [...first.body.items];
    let next = first.body.next;
    while (next) {
      const page = await getRun(created.body.run_id, { limit: '2', next });
      seen.push(...page.body.items);
      next = page.body.next;
    }
    expect(seen.map((i) => i.subscription_id).sort()).toEqual(created.body.items.map((i: any) => i.subscription_id).sort());
  });

  it('lists past runs newest first, with status, counts, actor and reason, in pages', async () => {
    const older = await post({ state: 'parked', reason: 'the older run', dry_run: true });
    app.clock.advance(60_000);
    const newer = await post({ state: 'exhausted', reason: 'the newer run', dry_run: true });
    const first = await call('GET', { route: ROUTE, query: { limit: '1' } });
    expect(first.status).toBe(200);
    expect(first.body.items).toEqual([expect.objectContaining({ run_id: newer.body.run_id, status: 'done', state: 'exhausted', actor: 'operator-1', reason: 'the newer run', counts: expect.any(Object) })]);
    expect(first.body.items[0]).not.toHaveProperty('items');
    const second = await call('GET', { route: ROUTE, query: { limit: '1', next: first.body.next } });
    expect(second.body.items.map((r: any) => r.run_id)).toEqual([older.body.run_id]);
  });
});

describe('the retry-run-worker never charges an item twice', () => {
  it('a redelivered message (the same message again, or two deliveries at once) adds no charge', async () => {
    const parked = await seedRecords(app, parkedRecord(), parkedRecord());
    const created = await post({ state: 'parked', reason: 'outage over' });
    const records = takeMessages();
    // Two deliveries of the same messages at the same time (a visibility timeout that ran out mid-batch).
    const [a, b] = await Promise.all([worker(sqsEvent(records), lambdaContext()), worker(sqsEvent(records), lambdaContext())]);
    // One of them met a held lock and asks for redelivery; deliver those again, and everything once more.
    const again = [...a.batchItemFailures, ...b.batchItemFailures].map((f) => records.find((r) => r.messageId === f.itemIdentifier)!);
    await drain(again);
    await drain(records);
    expect(chargesOf(parked)).toHaveLength(2);
    const read = await getRun(created.body.run_id);
    expect(read.body.counts).toEqual({ billed: 2, failed: 0, still_due: 0, skipped: 0 });

    // A second message for the same item (another send of the run) finds it finished.
    const duplicate = sqsRecord(JSON.parse(records[0]!.body), { messageId: randomUUID() });
    expect((await worker(sqsEvent([duplicate]), lambdaContext())).batchItemFailures).toEqual([]);
    expect(chargesOf(parked)).toHaveLength(2);
  });

  it('a delivery that crashed after the retry committed is recorded from the run audit row, not retried again', async () => {
    const parked = parkedRecord();
    await seedRecords(app, parked);
    app.simulator.configure({ default: 'approve', users: { [parked.user_id]: 'decline' } });
    const created = await post({ state: 'parked', reason: 'outage over' });
    const [record] = takeMessages();
    const message = JSON.parse(record!.body);
    // The first delivery claimed the item and ran retry-billing (declined), then died before recording it.
    const at = formatInstant(app.clock.now());
    expect((await app.deps.retryRuns.claimItem(message.run_id, message.subscription_id, record!.messageId, at, at)).kind).toBe('claimed');
    await retryBilling(attemptDepsOf(app.deps, app.deps.logger), { subscriptionId: parked.subscription_id, owner: 'crashed', actor: message.actor, reason: message.reason, runId: message.run_id });
    expect(await periodOf(parked)).toMatchObject({ billing_status: 'FAILED', payment_attempts: 1 });

    // The redelivery (same message id) finds the run's audit row: failed, recorded; no second presentment.
    expect((await worker(sqsEvent([record!]), lambdaContext())).batchItemFailures).toEqual([]);
    expect(await periodOf(parked)).toMatchObject({ billing_status: 'FAILED', payment_attempts: 1 });
    const read = await getRun(created.body.run_id);
    expect(read.body.counts).toEqual({ billed: 0, failed: 1, still_due: 0, skipped: 0 });
    expect(read.body.items[0]).toMatchObject({ outcome: 'failed', detail: 'recorded_earlier' });
  });

  it('a refused item claim tells missing, busy and finished apart from the condition failure alone, with no read after it', async () => {
    const parked = parkedRecord();
    await seedRecords(app, parked);
    const created = await post({ state: 'parked', reason: 'outage over' });
    const [record] = takeMessages();
    const message = JSON.parse(record!.body);
    const at = formatInstant(app.clock.now());
    const longAgo = formatInstant(new Date(app.clock.now().getTime() - DAY));
    const claim = async (runId: string, claimId: string) => {
      let answer: Awaited<ReturnType<typeof app.deps.retryRuns.claimItem>> | undefined;
      expect(await commandsSent(app.db.client, async () => (answer = await app.deps.retryRuns.claimItem(runId, message.subscription_id, claimId, at, longAgo)))).toEqual(['UpdateItemCommand']);
      return answer!;
    };
    expect(await claim(`run-${randomUUID()}`, 'claim-a')).toEqual({ kind: 'missing' });
    expect((await claim(message.run_id, 'claim-a')).kind).toBe('claimed');
    // Another delivery while the first holds a fresh claim.
    expect(await claim(message.run_id, 'claim-b')).toEqual({ kind: 'busy' });
    expect(await app.deps.retryRuns.finishItem(message.run_id, message.subscription_id, 'claim-a', 'skipped', 'not_open', at)).toBe(true);
    const refused = await claim(message.run_id, 'claim-b');
    expect(refused).toMatchObject({ kind: 'finished', item: { run_id: created.body.run_id, subscription_id: parked.subscription_id, outcome: 'skipped', detail: 'not_open' } });
  });

  it('an item whose user is locked is delivered again and billed once the lock is free', async () => {
    const parked = parkedRecord();
    await seedRecords(app, parked);
    await post({ state: 'parked', reason: 'outage over' });
    await holdLock(app, parked.user_id);
    const records = takeMessages();
    expect((await worker(sqsEvent(records), lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: records[0]!.messageId }]);
    expect(chargesOf([parked])).toHaveLength(0);
    app.clock.advance(61_000); // the other holder's lease runs out
    expect(await drain(records)).toEqual([]);
    expect(chargesOf([parked])).toHaveLength(1);
  });

  it('a period settled by another path after the selection is skipped not_open, with no second charge', async () => {
    const parked = parkedRecord();
    await seedRecords(app, parked);
    const created = await post({ state: 'parked', reason: 'outage over' });
    // An operator retries it by hand before the worker gets to it.
    const single = await call('POST', { route: '/v1/subscriptions/{subscriptionId}/retry-billing', pathParameters: { subscriptionId: parked.subscription_id }, body: { reason: 'by hand' } });
    expect(single.body.outcome).toBe('billed');
    await drain();
    expect(chargesOf([parked])).toHaveLength(1);
    expect((await getRun(created.body.run_id)).body.items[0]).toMatchObject({ outcome: 'skipped', detail: 'not_open' });
  });

  it('a collections run racing the bulk run adds no charge', async () => {
    const parked = await seedRecords(app, ...Array.from({ length: 10 }, () => parkedRecord()));
    await post({ state: 'parked', reason: 'outage over' });
    const collect = async () => {
      await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(NOW), lambdaContext());
      const batch = app.collectionsQueue.sent.map((m) => sqsRecord(m.body));
      app.collectionsQueue.clear();
      if (batch.length > 0) await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent(batch), lambdaContext());
    };
    const records = takeMessages();
    await Promise.all([drain(records.slice(0, 5)), collect(), drain(records.slice(5)), collect()]);
    await drain(records); // whatever met a held lock
    await collect();
    expect(chargesOf(parked)).toHaveLength(10);
    for (const p of parked) expect((await periodOf(p)).billing_status).toBe('COMPLETED');
  });
});

describe('bad input answers 400 and writes nothing; an unknown run is 404', () => {
  const cases: [string, unknown, string | null][] = [
    ['no reason', { state: 'parked' }, 'k-no-reason'],
    ['a blank reason', { state: 'parked', reason: '   ' }, 'k-blank'],
    ['an unknown state', { state: 'retrying', reason: 'r' }, 'k-state'],
    ['more than 1,000 user ids', { state: 'parked', reason: 'r', user_ids: Array.from({ length: 1001 }, (_, i) => `user-${i}`) }, 'k-many'],
    ['a malformed user id', { state: 'parked', reason: 'r', user_ids: ['fine', 'has space'] }, 'k-malformed'],
    ['a user id with a slash', { state: 'parked', reason: 'r', user_ids: ['a/b'] }, 'k-slash'],
    ['a limit of 0', { state: 'parked', reason: 'r', limit: 0 }, 'k-limit'],
    ['an unknown field', { state: 'parked', reason: 'r', everything: true }, 'k-unknown'],
    ['no Idempotency-Key', { state: 'parked', reason: 'r' }, null],
  ];
  for (const [what, body, key] of cases) {
    it(`${what}`, async () => {
      await seedRecords(app, parkedRecord());
      const answer = await post(body, key);
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      expect(answer.body.error.code).toMatch(/^invalid_body|idempotency_key_required$/);
      if (key) expect(await app.deps.retryRuns.findByKey('operator-1', key)).toBeUndefined();
      expect(app.retryRunsQueue.sent).toHaveLength(0);
      expect(app.simulator.charges()).toHaveLength(0);
    });
  }

  it('a run id that does not exist is 404, a malformed one 400', async () => {
    expect((await getRun(randomUUID())).status).toBe(404);
    expect((await getRun('no spaces')).status).toBe(400);
  });

  it('needs billing:operate to create a run', async () => {
    const answer = await call('POST', { route: ROUTE, body: { state: 'parked', reason: 'r' }, headers: { 'Idempotency-Key': 'k' }, auth: { sub: 'reader', scopes: ['billing:read'] } });
    expect(answer.status).toBe(403);
  });
});
