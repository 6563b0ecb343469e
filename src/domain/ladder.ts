import { InterruptedError, LockLostError, ProcessorOutageError, ProcessorThrottledError, TransientError } from './errors.js';
import type { BillingRecord } from './records.js';
import { COLLECTIBLE_STATUSES } from './statuses.js';

/**
 * Saved billing failures and the retry ladder (DESIGN 5). A failure is keyed to the work that failed, so
 * any write that changes the due work voids it without clearing it.
 */

/** Waits after counted failure n (1-based): 15 min, 1 h, 4 h, 12 h, 24 h × 3. The 8th failure parks. */
export const BILLING_RETRY_WAITS_MS: readonly number[] = [
  15 * 60_000,
  60 * 60_000,
  4 * 60 * 60_000,
  12 * 60 * 60_000,
  24 * 60 * 60_000,
  24 * 60 * 60_000,
  24 * 60 * 60_000,
];
export const MAX_BILLING_ATTEMPTS = BILLING_RETRY_WAITS_MS.length + 1;

export type BillingFailureState = 'healthy' | 'retrying' | 'parked';

export interface BillingFailureView {
  readonly state: Exclude<BillingFailureState, 'healthy'>;
  readonly count: number;
  readonly failed_at: string;
  readonly next_attempt_at: string | null;
  readonly last_error: string;
}

export interface BillingFailureFields {
  billing_failed_for: string;
  billing_failure_count: number;
  billing_failed_at: string;
  billing_next_attempt_at?: string | undefined;
  billing_last_error: string;
}

type FailureInputs = Pick<
  BillingRecord,
  | 'billing_status'
  | 'billing_date'
  | 'payment_attempts'
  | 'billing_failed_for'
  | 'billing_failure_count'
  | 'billing_failed_at'
  | 'billing_next_attempt_at'
  | 'billing_last_error'
>;

export function dueKey(record: Pick<BillingRecord, 'billing_date' | 'payment_attempts'>): string {
  return `${record.billing_date}#${record.payment_attempts}`;
}

/** The one place that decides whether the saved failure still counts. */
export function isFailureLive(record: FailureInputs): boolean {
  return (
    COLLECTIBLE_STATUSES.has(record.billing_status) &&
    record.billing_failed_for !== undefined &&
    record.billing_failed_for === dueKey(record)
  );
}

export function failureState(record: FailureInputs): BillingFailureState {
  if (!isFailureLive(record)) return 'healthy';
  return record.billing_next_attempt_at ? 'retrying' : 'parked';
}

export function billingFailureView(record: FailureInputs): BillingFailureView | undefined {
  if (!isFailureLive(record)) return undefined;
  return {
    state: record.billing_next_attempt_at ? 'retrying' : 'parked',
    count: record.billing_failure_count ?? 0,
    failed_at: record.billing_failed_at ?? '',
    next_attempt_at: record.billing_next_attempt_at ?? null,
    last_error: record.billing_last_error ?? '',
  };
}

export function isHeldByLadder(record: FailureInputs, now: Date): boolean {
  const state = failureState(record);
  if (state === 'parked') return true;
  if (state === 'retrying') return Date.parse(record.billing_next_attempt_at!) > now.getTime();
  return false;
}

export function nextFailure(record: FailureInputs, now: Date, lastError: string, format: (d: Date) => string): BillingFailureFields {
  const count = isFailureLive(record) ? (record.billing_failure_count ?? 0) + 1 : 1;
  const wait = BILLING_RETRY_WAITS_MS[count - 1];
  return {
    billing_failed_for: dueKey(record),
    billing_failure_count: count,
    billing_failed_at: format(now),
    billing_next_attempt_at: wait === undefined ? undefined : format(new Date(now.getTime() + wait)),
    billing_last_error: lastError,
  };
}

/** `outage`: our own credentials or configuration failed at a processor (DESIGN 15): never counted. */
export type FailureClass = 'interrupted' | 'throttled' | 'transient' | 'outage' | 'counted';

/** By error type, never message text. */
export function classifyFailure(error: unknown, signal?: AbortSignal): FailureClass {
  // A lost lease is the run's own context ending, whoever threw it.
  if (signal?.aborted || error instanceof InterruptedError || error instanceof LockLostError) return 'interrupted';
  if (error instanceof ProcessorOutageError) return 'outage';
  if (error instanceof ProcessorThrottledError) return 'throttled';
  if (error instanceof TransientError) return 'transient';
  // Anything else counts, including an AbortError/TimeoutError from an inner deadline while the run is alive.
  return 'counted';
}

/** Curated sentences that may be saved as written; everything else is replaced (DESIGN 5). */
export const CURATED_BILLING_ERRORS = new Set<string>([
  'The payment processor is unavailable.',
  'The payment processor rejected the request.',
  'The attempt completed but the subscription is still due.',
  'The account on file cannot be debited by ACH.',
  'The payment amount is invalid.',
]);

export function allowlistedError(message: string, subscriptionId: string): string {
  return CURATED_BILLING_ERRORS.has(message) ? message : `An internal error occurred. Reference: ${subscriptionId}`;
}
