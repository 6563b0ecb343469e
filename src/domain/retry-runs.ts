import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';
import { dunningState } from './dunning.js';
import { idSchema } from './ids.js';
import { failureState } from './ladder.js';
import type { BillingRecord } from './records.js';

/** Bulk retry runs (POST /v1/billing/retry-runs): each selected period runs retry-billing's path through a queue. */

export const RETRY_RUN_STATES = ['parked', 'exhausted'] as const;
export type RetryRunState = (typeof RETRY_RUN_STATES)[number];

export const MAX_RUN_USER_IDS = 1_000;
/** A larger backlog takes several runs. */
export const MAX_RUN_ITEMS = 5_000;
export const DEFAULT_RUN_LIMIT = 1_000;

export const retryRunRequestSchema = lazySchema(() => z.strictObject({
  state: z.enum(RETRY_RUN_STATES).check(z.describe('parked: live billing failure with no next attempt (DESIGN 5); exhausted: dunning stopped (DESIGN 5b)')),
  user_ids: z.optional(z.array(idSchema).check(z.minLength(1), z.maxLength(MAX_RUN_USER_IDS))).check(z.describe(`only these users' periods (at most ${MAX_RUN_USER_IDS})`)),
  limit: z.optional(z.int().check(z.minimum(1), z.maximum(MAX_RUN_ITEMS))).check(z.describe(`periods selected at most (default ${DEFAULT_RUN_LIMIT})`)),
  reason: z.string().check(z.trim(), z.minLength(1), z.maxLength(1000), z.describe('why: written on every audit row of the run')),
  dry_run: z.optional(z.boolean()).check(z.describe('select and store the run, charge nothing')),
}));
export type RetryRunRequest = z.infer<typeof retryRunRequestSchema>;

/** The same body in any key or user-id order is the same run: a replay, not a reuse of the Idempotency-Key. */
export function requestFingerprint(request: RetryRunRequest): string {
  return JSON.stringify({
    state: request.state,
    user_ids: request.user_ids ? [...new Set(request.user_ids)].sort() : null,
    limit: request.limit ?? DEFAULT_RUN_LIMIT,
    reason: request.reason,
    dry_run: request.dry_run ?? false,
  });
}

/** By the record itself: the indexes are eventually consistent. */
export function isInRunState(record: BillingRecord, state: RetryRunState): boolean {
  return state === 'parked' ? failureState(record) === 'parked' : dunningState(record) === 'exhausted';
}

/** `selected`: on a dry run, nothing will run. */
export const RETRY_ITEM_OUTCOMES = ['pending', 'processing', 'billed', 'failed', 'still_due', 'skipped', 'selected'] as const;
export type RetryItemOutcome = (typeof RETRY_ITEM_OUTCOMES)[number];
export type RetryItemResult = 'billed' | 'failed' | 'still_due' | 'skipped';
export const RETRY_ITEM_RESULTS: readonly RetryItemResult[] = ['billed', 'failed', 'still_due', 'skipped'];

export type RetryRunCounts = Record<RetryItemResult, number>;

/** A request that finds `selecting` or `selected` left behind by a crash completes the creation. */
export type RetryRunPhase = 'selecting' | 'selected' | 'enqueued';

export interface RetryRun {
  readonly run_id: string;
  readonly actor: string;
  readonly reason: string;
  readonly state: RetryRunState;
  readonly dry_run: boolean;
  readonly limit: number;
  readonly user_id_count?: number | undefined;
  readonly phase: RetryRunPhase;
  readonly selected: number;
  readonly counts: RetryRunCounts;
  readonly created_at: string;
  /** The creating request's claim; a stale one can be taken over. */
  readonly claim_token: string;
  readonly claimed_at: string;
}

export interface RetryRunItem {
  readonly run_id: string;
  readonly subscription_id: string;
  readonly user_id: string;
  readonly billing_date: string;
  readonly outcome: RetryItemOutcome;
  readonly detail?: string | undefined;
  readonly finished_at?: string | undefined;
}

export function emptyCounts(): RetryRunCounts {
  return { billed: 0, failed: 0, still_due: 0, skipped: 0 };
}

export function runStatus(run: RetryRun): 'running' | 'done' {
  if (run.phase === 'selecting') return 'running';
  if (run.dry_run) return 'done';
  const finished = RETRY_ITEM_RESULTS.reduce((sum, k) => sum + run.counts[k], 0);
  return finished >= run.selected ? 'done' : 'running';
}

/** An interrupted run's items wait until the POST is repeated: the operator must see that, since nothing else will. */
export const RETRY_RUN_CREATIONS = ['complete', 'in_progress', 'interrupted'] as const;
export type RetryRunCreation = (typeof RETRY_RUN_CREATIONS)[number];

export function creationOf(run: RetryRun, now: Date): RetryRunCreation {
  if (run.phase === 'enqueued' || (run.phase === 'selected' && run.dry_run)) return 'complete';
  return isCreationClaimStale(run, now) ? 'interrupted' : 'in_progress';
}

export function isCreationClaimStale(run: Pick<RetryRun, 'claimed_at'>, now: Date): boolean {
  return Date.parse(run.claimed_at) <= now.getTime() - RUN_CLAIM_STALE_MS;
}

/** One queue message per item, run under the run's actor and reason. */
export const retryRunMessageSchema = lazySchema(() => z.strictObject({
  kind: z.literal('retry_run_item'),
  run_id: z.string().check(z.minLength(1), z.maxLength(64)),
  subscription_id: idSchema,
  user_id: idSchema,
  actor: z.string().check(z.minLength(1), z.maxLength(1024)),
  reason: z.string().check(z.minLength(1), z.maxLength(1000)),
}));
export type RetryRunMessage = z.infer<typeof retryRunMessageSchema>;

/** An item claim older than this may be taken over: its worker is gone. */
export const ITEM_CLAIM_STALE_MS = 15 * 60_000;
/** A creation claim older than this may be taken over by a replay (the API's own timeout is 29 s). */
export const RUN_CLAIM_STALE_MS = 2 * 60_000;
