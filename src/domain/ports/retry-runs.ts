import type { RetryItemResult, RetryRun, RetryRunItem } from '../retry-runs.js';
import type { Page, PageRequest } from './page.js';

export type RetryRunClaim =
  | { readonly kind: 'created' }
  /** The key names an existing run; `sameRequest` says whether its request matches this one. */
  | { readonly kind: 'exists'; readonly run: RetryRun; readonly sameRequest: boolean };

export type RetryItemClaim =
  | { readonly kind: 'claimed'; readonly item: RetryRunItem; /** false when this claim continues an earlier one (redelivery, takeover) */ readonly fresh: boolean }
  | { readonly kind: 'finished'; readonly item: RetryRunItem }
  /** Another message holds a live claim on the item. */
  | { readonly kind: 'busy' }
  | { readonly kind: 'missing' };

/** Runs, their items and the Idempotency-Key that names each run. */
export interface RetryRunStore {
  /** The run named by this caller's Idempotency-Key, if any. */
  findByKey(actor: string, idempotencyKey: string): Promise<RetryRun | undefined>;
  get(runId: string): Promise<RetryRun | undefined>;
  /** Key and run header in one transaction, each conditional on its absence. */
  claim(actor: string, idempotencyKey: string, fingerprint: string, run: RetryRun): Promise<RetryRunClaim>;
  /** Takes over a stale creation claim; false when someone else holds or took it. */
  takeOver(runId: string, previousToken: string, token: string, at: string): Promise<boolean>;
  /** Writes items that are absent (each conditional on absence); existing ones are left as they are. */
  putItems(items: readonly RetryRunItem[]): Promise<void>;
  /** `selecting` → `selected` with the item count, conditional on the claim token. False when the claim was lost. */
  markSelected(runId: string, token: string, selected: number): Promise<boolean>;
  markEnqueued(runId: string): Promise<void>;
  /** Runs, newest first, paged (runs created before the listing existed are not listed). */
  listRuns(page?: PageRequest): Promise<Page<RetryRun>>;
  /** Items in subscription id order, paged. */
  listItems(runId: string, page?: PageRequest): Promise<Page<RetryRunItem>>;
  /** pending → processing under `claimId` (the message id); a redelivery or a claim older than `staleBefore` retakes it. */
  claimItem(runId: string, subscriptionId: string, claimId: string, at: string, staleBefore: string): Promise<RetryItemClaim>;
  /** processing → result and the run's count, one transaction conditional on the claim. False when the claim was lost. */
  finishItem(runId: string, subscriptionId: string, claimId: string, result: RetryItemResult, detail: string | undefined, at: string): Promise<boolean>;
}
