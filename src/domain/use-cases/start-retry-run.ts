import type { IdGenerator } from '../billing-record.js';
import { IdempotencyKeyReusedError, RequestInProgressError } from '../errors.js';
import type { BillingStore } from '../ports/billing-store.js';
import type { Clock } from '../ports/clock.js';
import type { Page } from '../ports/page.js';
import type { QueueMessage, QueuePort } from '../ports/queue.js';
import type { RetryRunStore } from '../ports/retry-runs.js';
import type { BillingRecord } from '../records.js';
import {
  DEFAULT_RUN_LIMIT,
  emptyCounts,
  isInRunState,
  requestFingerprint,
  isCreationClaimStale,
  type RetryRun,
  type RetryRunItem,
  type RetryRunMessage,
  type RetryRunRequest,
} from '../retry-runs.js';
import { formatInstant } from '../time.js';

export interface RetryRunDeps {
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly billing: BillingStore;
  readonly retryRuns: RetryRunStore;
  readonly retryRunsQueue: QueuePort;
}

export interface StartRetryRunInput {
  readonly actor: string;
  readonly idempotencyKey: string;
  readonly request: RetryRunRequest;
}

export interface StartedRetryRun {
  readonly run: RetryRun;
  readonly items: readonly RetryRunItem[];
  /** True when the key named an existing run (the answer is that run, nothing new was selected or charged). */
  readonly replayed: boolean;
}

/** Index pages read per selection step (the store caps a page at 1,000). */
const SELECTION_PAGE = 1_000;
const USER_READ_CONCURRENCY = 8;

/**
 * Claims the Idempotency-Key and the run, selects the periods, stores an item each and queues them.
 * Every step can be repeated: a replay answers the run, completing a creation a crash left halfway.
 */
export async function startRetryRun(deps: RetryRunDeps, input: StartRetryRunInput): Promise<StartedRetryRun> {
  const now = deps.clock.now();
  const at = formatInstant(now);
  const token = deps.ids.newId();
  const draft: RetryRun = {
    run_id: deps.ids.newId(),
    actor: input.actor,
    reason: input.request.reason,
    state: input.request.state,
    dry_run: input.request.dry_run ?? false,
    limit: input.request.limit ?? DEFAULT_RUN_LIMIT,
    ...(input.request.user_ids ? { user_id_count: new Set(input.request.user_ids).size } : {}),
    phase: 'selecting',
    selected: 0,
    counts: emptyCounts(),
    created_at: at,
    claim_token: token,
    claimed_at: at,
  };
  const claim = await deps.retryRuns.claim(input.actor, input.idempotencyKey, requestFingerprint(input.request), draft);
  if (claim.kind === 'created') return complete(deps, draft, input.request, false);

  if (!claim.sameRequest) {
    throw new IdempotencyKeyReusedError('this Idempotency-Key was used for a different retry run request; use a new key');
  }
  const run = claim.run;
  if (run.phase === 'selecting') {
    // Another request is creating it, or one crashed doing so: only a stale claim is taken over.
    if (!isCreationClaimStale(run, now) || !(await deps.retryRuns.takeOver(run.run_id, run.claim_token, token, at))) {
      throw new RequestInProgressError('the retry run for this Idempotency-Key is still being created; repeat the request shortly');
    }
    return complete(deps, { ...run, claim_token: token, claimed_at: at }, input.request, true);
  }
  return complete(deps, run, input.request, true);
}

/** Finishes whatever the run's phase leaves to do, and answers the run with all its items. */
async function complete(deps: RetryRunDeps, run: RetryRun, request: RetryRunRequest, replayed: boolean): Promise<StartedRetryRun> {
  let current = run;
  let items: RetryRunItem[];
  if (current.phase === 'selecting') {
    // A takeover keeps what the earlier request stored and selects only the rest.
    const stored = await allItems(deps.retryRuns, current.run_id);
    const taken = new Set(stored.map((i) => i.subscription_id));
    const records = await selectPeriods(deps.billing, request, current.limit - stored.length, taken);
    const fresh = records.map((r): RetryRunItem => ({
      run_id: current.run_id,
      subscription_id: r.subscription_id,
      user_id: r.user_id,
      billing_date: r.billing_date,
      outcome: current.dry_run ? 'selected' : 'pending',
    }));
    await deps.retryRuns.putItems(fresh);
    // The store's order (by subscription id), so the first answer and a replay list the items alike.
    items = [...stored, ...fresh].sort((x, y) => (x.subscription_id < y.subscription_id ? -1 : x.subscription_id > y.subscription_id ? 1 : 0));
    if (!(await deps.retryRuns.markSelected(current.run_id, current.claim_token, items.length))) {
      throw new RequestInProgressError('the retry run for this Idempotency-Key is being created by another request; repeat the request shortly');
    }
    current = { ...current, phase: 'selected', selected: items.length };
  } else {
    items = await allItems(deps.retryRuns, current.run_id);
  }
  if (current.phase === 'selected' && !current.dry_run) {
    // A message per item not yet finished; a duplicate (after a crash here) finds its item claimed or done.
    const messages = items.filter((i) => i.outcome === 'pending' || i.outcome === 'processing').map((i) => messageOf(current, i));
    await deps.retryRunsQueue.sendBatch(messages);
    await deps.retryRuns.markEnqueued(current.run_id);
    current = { ...current, phase: 'enqueued' };
  }
  // The counts move as the worker finishes items: read them back for a replay.
  const latest = replayed ? ((await deps.retryRuns.get(current.run_id)) ?? current) : current;
  return { run: latest, items, replayed };
}

function messageOf(run: RetryRun, item: RetryRunItem): QueueMessage {
  const body: RetryRunMessage = {
    kind: 'retry_run_item',
    run_id: run.run_id,
    subscription_id: item.subscription_id,
    user_id: item.user_id,
    actor: run.actor,
    reason: run.reason,
  };
  return { id: `${run.run_id}:${item.subscription_id}`, body: JSON.stringify(body) };
}

async function allItems(store: RetryRunStore, runId: string): Promise<RetryRunItem[]> {
  const items: RetryRunItem[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.listItems(runId, { limit: SELECTION_PAGE, cursor });
    items.push(...page.items);
    cursor = page.next;
  } while (cursor !== null);
  return items;
}

/** At most `limit` periods the request selects, none of `exclude`; each is checked again (the indexes lag). */
export async function selectPeriods(
  billing: BillingStore,
  request: Pick<RetryRunRequest, 'state' | 'user_ids'>,
  limit: number,
  exclude: ReadonlySet<string> = new Set(),
): Promise<BillingRecord[]> {
  if (limit <= 0) return [];
  const picked: BillingRecord[] = [];
  const seen = new Set(exclude);
  const take = (record: BillingRecord): boolean => {
    if (picked.length >= limit || seen.has(record.subscription_id) || !isInRunState(record, request.state)) return false;
    seen.add(record.subscription_id);
    picked.push(record);
    return true;
  };
  if (request.user_ids) {
    const users = [...new Set(request.user_ids)];
    const perUser = new Array<BillingRecord[]>(users.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(USER_READ_CONCURRENCY, users.length) }, async () => {
        for (let i = next++; i < users.length; i = next++) perUser[i] = await userPeriods(billing, users[i]!, request.state);
      }),
    );
    for (const records of perUser) for (const r of records) take(r);
    return picked;
  }
  let cursor: string | null = null;
  do {
    const page: Page<BillingRecord> =
      request.state === 'parked'
        ? await billing.listFailing({ limit: SELECTION_PAGE, cursor })
        : await billing.listDunning('exhausted', { limit: SELECTION_PAGE, cursor });
    for (const record of page.items) take(record);
    cursor = page.next;
  } while (cursor !== null && picked.length < limit);
  return picked;
}

async function userPeriods(billing: BillingStore, userId: string, state: RetryRunRequest['state']): Promise<BillingRecord[]> {
  const found: BillingRecord[] = [];
  let cursor: string | null = null;
  do {
    const page = await billing.listByUser(userId, { limit: 100, cursor });
    for (const record of page.items) if (isInRunState(record, state)) found.push(record);
    cursor = page.next;
  } while (cursor !== null);
  return found;
}
