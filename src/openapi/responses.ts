import { achEntrySchema, holdSchema, instrumentSchema, presentmentSchema } from '../domain/instruments/instrument.js';
import * as z from '../domain/zod.js';
import { NOT_YET_RECORDED } from '../domain/ach-outcomes.js';
import { HOLD_CODES } from '../domain/collectible.js';
import { CEILING_CODE } from '../domain/instruments/ceilings.js';
import { DECIDED_BY } from '../domain/instruments/holds.js';
import { ATTEMPT_OUTCOME_UNKNOWN } from '../domain/takeover.js';
import { dollarStringSchema } from '../domain/money.js';
import { RETRY_ITEM_OUTCOMES, RETRY_RUN_CREATIONS, RETRY_RUN_STATES } from '../domain/retry-runs.js';
import { BILLING_STATUSES, billingRecordSchema, declineClassSchema, historyRowSchema } from '../domain/records.js';
import { loanPaymentSchema } from '../domain/loan-payments.js';
import { reconciliationExceptionSchema, reconciliationRunSchema } from '../domain/reconciliation/schemas.js';

/**
 * What the API answers, as zod schemas built from the domain's own record schemas, for the OpenAPI
 * document only (the handlers serialize with src/handlers/shared/serialize.ts; the OpenAPI tests
 * check real answers against these, so a field added to or dropped from an answer is noticed).
 */

/** Bookkeeping attributes the API never shows (see serialize.ts). */
const INTERNAL_ATTRIBUTES: ReadonlySet<string> = new Set([
  'version',
  'membership_event_id',
  'membership_event_at',
  'last_request_key',
  'ach_represented',
  'ach_original_entry_date',
  'ach_return_code',
  'ach_blocked',
  'ach_unauthorized',
  'card_disputed',
  'billing_anchor_day',
  'billing_failed_for',
  'billing_failure_count',
  'billing_failed_at',
  'billing_next_attempt_at',
  'billing_last_error',
  'billing_presented_for',
  'dunning_first_declined_at',
  'dunning_attempts',
  'dunning_next_attempt_at',
  'dunning_presented_at',
  'card_network',
]);

function publicShape<T extends z.core.$ZodShape>(shape: T): z.core.$ZodShape {
  return Object.fromEntries(Object.entries(shape).filter(([name]) => !INTERNAL_ATTRIBUTES.has(name)));
}

export const billingFailureViewSchema = z.strictObject({
  state: z.enum(['retrying', 'parked']),
  count: z.int().check(z.nonnegative()),
  failed_at: z.string(),
  next_attempt_at: z.nullable(z.string()).check(z.describe('null once parked: only an operator retry bills it again')),
  last_error: z.string(),
}).check(z.describe('The live billing failure of DESIGN 5, present only while it is live'));

export const dunningViewSchema = z.strictObject({
  state: z.enum(['retrying', 'exhausted']),
  attempts: z.int().check(z.nonnegative(), z.describe('attempts of the current dunning cycle, the first decline included')),
  next_attempt_at: z.nullable(z.string()).check(z.describe('null once exhausted: only a new payment method or an operator retry restarts it')),
  decline_code: z.string(),
  decline_class: declineClassSchema,
}).check(z.describe('The dunning of a declined period (DESIGN 5b), present on every read of a FAILED period that was declined'));

export const displayStatusSchema = z.enum([...BILLING_STATUSES, 'PASTDUE']).check(z.describe('PASTDUE is computed on read for PENDING/FAILED periods more than 30 days past billing_date'));

export const subscriptionViewSchema = z.strictObject({
  ...publicShape(billingRecordSchema.shape),
  amount: dollarStringSchema.check(z.describe('two-decimal dollars, e.g. "19.99"')),
  billing_status: displayStatusSchema,
  billing_failure: z.optional(billingFailureViewSchema),
  dunning: z.optional(dunningViewSchema),
}).check(z.describe('One billing period of one user'));

export const historyRowViewSchema = z.strictObject({
  ...publicShape(historyRowSchema.shape),
  amount: dollarStringSchema,
  billing_failure: z.optional(billingFailureViewSchema),
  dunning: z.optional(dunningViewSchema),
}).check(z.describe('An append-only audit row: the record as written, the decision context (data_*), and the actor and reason of operator and user actions'));

export const loanPaymentViewSchema = z.strictObject(Object.fromEntries(Object.entries(loanPaymentSchema.shape).filter(([name]) => name !== 'version'))).check(z.describe('A loan payment; amounts in integer cents'));

export const loanPaymentHistoryRowViewSchema = z.extend(loanPaymentViewSchema, {
    actor: z.string().check(z.describe('who made the change: the JWT sub, or system:<function> for automatic changes')),
    reason: z.optional(z.string()).check(z.describe('why: the event or action behind the change')),
    recorded_at: z.string().check(z.describe('when the change was written (RFC3339)')),
  }).check(z.describe('An append-only audit row of a loan payment: the payment as the change left it, its actor and reason'));

const nextToken = z.nullable(z.string()).check(z.describe('opaque token for the next page (pass as ?next=), null on the last page'));
export const subscriptionPageSchema = z.strictObject({ items: z.array(subscriptionViewSchema), next: nextToken });
export const historyPageSchema = z.strictObject({ items: z.array(historyRowViewSchema), next: nextToken });
export const loanPaymentPageSchema = z.strictObject({ items: z.array(loanPaymentViewSchema), next: nextToken });
export const loanPaymentHistoryPageSchema = z.strictObject({ items: z.array(loanPaymentHistoryRowViewSchema), next: nextToken });

export const payResultSchema = z.strictObject({
  outcome: z.enum(['collected', 'submitted', 'declined', 'failed', 'not_due', 'cancelled', 'inactive', 'paused']),
  not_due_reason: z.optional(z.string()),
  replayed: z.boolean().check(z.describe('true when this Idempotency-Key was already used: the answer describes the first request')),
  billing_failure: z.optional(billingFailureViewSchema),
  subscription: subscriptionViewSchema,
});

export const retryBillingResultSchema = z.strictObject({
  outcome: z.enum(['billed', 'failed', 'still_due', 'not_billed']),
  billing_failure: z.optional(billingFailureViewSchema),
  still_due: z.boolean(),
  subscription: subscriptionViewSchema,
});

export const subscriptionResultSchema = z.strictObject({ subscription: subscriptionViewSchema });

const retryRunFields = {
  run_id: z.string(),
  status: z.enum(['running', 'done']).check(z.describe('done once every selected item has its outcome (a dry run at once)')),
  creation: z.enum(RETRY_RUN_CREATIONS).check(
    z.describe(
      'complete once every selected item is queued for the worker (a dry run once stored); interrupted when the request creating the run stopped before that (a crash or timeout) and nothing has finished it since: its pending items wait until the POST is repeated with the same Idempotency-Key and body',
    ),
  ),
  dry_run: z.boolean(),
  state: z.enum(RETRY_RUN_STATES),
  reason: z.string(),
  actor: z.string().check(z.describe('the JWT sub that created the run; every audit row of the run carries it')),
  created_at: z.string(),
  selected: z.int().check(z.nonnegative()),
  counts: z.strictObject({
    billed: z.int().check(z.nonnegative()),
    failed: z.int().check(z.nonnegative()),
    still_due: z.int().check(z.nonnegative()),
    skipped: z.int().check(z.nonnegative()),
  }),
};

export const retryRunCreatedSchema = z.strictObject({
  ...retryRunFields,
  replayed: z.boolean().check(z.describe('true when this Idempotency-Key already named the run: nothing new was selected or charged')),
  items: z.array(z.strictObject({ subscription_id: z.string(), user_id: z.string() })).check(z.describe('every selected period')),
}).check(z.describe('A bulk retry run as created (or replayed)'));

export const retryRunSchema = z.strictObject({
  ...retryRunFields,
  items: z.array(
    z.strictObject({
      subscription_id: z.string(),
      user_id: z.string(),
      billing_date: z.string(),
      outcome: z.enum(RETRY_ITEM_OUTCOMES).check(z.describe('pending/processing until the worker finishes it; selected on a dry run')),
      detail: z.optional(z.string()).check(z.describe('for skipped: the hold code (DESIGN 3.1), not_open or not_found; otherwise what the attempt did')),
      finished_at: z.optional(z.string()),
    }),
  ),
  next: nextToken,
}).check(z.describe('A bulk retry run: status, counts and one page of its items')); 

export const retryRunListSchema = z.strictObject({
  items: z.array(z.strictObject(retryRunFields)),
  next: nextToken,
}).check(z.describe('Past bulk retry runs, newest first (without their items)'));

export const errorSchema = z.strictObject({
  error: z.strictObject({
    code: z.string().check(z.describe('stable machine-readable code, e.g. invalid_body, not_found, locked, unbilled_period')),
    message: z.string(),
    details: z.optional(z.array(z.strictObject({ path: z.array(z.string()), message: z.string(), code: z.optional(z.string()) }))).check(z.describe('the zod issues of a 400')),
  }),
}).check(z.describe('Every error the functions answer'));

/** An error whose `code` is one of a closed list: the 409s an operation can answer, each named. */
function conflictSchema(codes: readonly [string, ...string[]], description: string) {
  return z.strictObject({
    error: z.strictObject({
      code: z.enum(codes).check(z.describe(description)),
      message: z.string(),
      decided_by: z.optional(z.enum(DECIDED_BY)).check(z.describe('the named rule that refused, where a hold or ceiling did (DESIGN 3.2)')),
      instrument_id: z.optional(z.string().check(z.describe('the instrument held'))),
    }),
  }).check(z.describe(`A conflict: nothing was changed or charged. ${description}`));
}

/** Manual pay and retry-billing (DESIGN 3.1, 5b): the holds that bind every path, or a lock or version race. */
export const paymentConflictSchema = conflictSchema(
  ['locked', 'concurrent_modification', 'illegal_transition', 'daily_debit_limit', ...HOLD_CODES, CEILING_CODE],
  'locked: being billed right now, retry shortly; concurrent_modification: changed meanwhile, retry; ' +
    'daily_debit_limit: the debit would take the member past PERSON_DAILY_DEBIT_LIMIT_CENTS presented today (UTC) by paths people start; ' +
    'ach_authorization_required: an ACH debit was returned unauthorized or stopped (R05/R07/R08/R10/R11/R29/R51), a new authorization is needed; ' +
    'ach_account_invalid: an ACH debit was returned for an account error (R02/R03/R04, ...), a new account is needed; ' +
    'ach_representment_limit: an R01/R09 entry was already re-presented twice within 180 days; ' +
    'card_disputed: a payment of the period is disputed; ' +
    'payment_method_required: the card was declined do_not_retry (lost, stolen, closed, ...), a new payment method is needed; ' +
    'network_ceiling: the card was declined as often as its network allows in the window (visa.ceiling_30d, visa.category1, mastercard.ceiling_24h, mastercard.ceiling_30d), customer-initiated attempts counted apart; try again later or with another card',
);

/** Waive (DESIGN 3.1): a period whose current key the processor may hold is not written off blind. */
export const waiveConflictSchema = conflictSchema(
  ['locked', 'concurrent_modification', 'illegal_transition', ATTEMPT_OUTCOME_UNKNOWN],
  'locked: being billed right now, retry shortly; concurrent_modification: changed meanwhile, retry; ' +
    'illegal_transition: the period is not PENDING, FAILED or PAUSED; ' +
    'attempt_outcome_unknown: an attempt of this period reached the processor and its outcome is not recorded — retry-billing resolves it with the same idempotency key (never a second charge), then waive',
);

/** A loan payment's creation: the account's ACH holds (DESIGN 2.7, 3.1) or a reused Idempotency-Key. */
export const loanPaymentConflictSchema = conflictSchema(
  [...HOLD_CODES, CEILING_CODE, 'idempotency_key_reused', 'already_exists', 'concurrent_modification', 'daily_debit_limit'],
  'a hold on the instrument the payment would use (a subscription\'s return holds it too), or the card\'s network ceiling (network_ceiling, counted over subscriptions and loans), with decided_by; ' +
    'daily_debit_limit: the payment would take the member past PERSON_DAILY_DEBIT_LIMIT_CENTS presented today (UTC) by paths people start; ' +
    'idempotency_key_reused: the key was used for a payment with other details',
);

/** An exception's resolution (DESIGN 12): nothing is booked that the period did not receive, nothing charged twice. */
export const resolveConflictSchema = conflictSchema(
  ['locked', 'concurrent_modification', 'illegal_transition', 'no_exception', 'refund_not_found', 'refund_mismatch', 'currency_mismatch', ATTEMPT_OUTCOME_UNKNOWN],
  'locked: being billed right now, retry shortly; concurrent_modification: changed meanwhile, retry; ' +
    'illegal_transition: the period is not PENDING, FAILED or ACHSENT; no_exception: it carries no exception that received money; ' +
    'refund_not_found: the processor knows no refund with that id; refund_mismatch: the refund is not a full refund of the money this exception received (or it failed); ' +
    'currency_mismatch: money in another currency cannot be accepted, refund it; attempt_outcome_unknown: an attempt reached the processor unrecorded, retry-billing first',
);

export const resolveExceptionResultSchema = z.strictObject({
  resolution: z.enum(['accept', 'waive', 'refunded_retry']),
  subscription: subscriptionViewSchema,
}).check(z.describe('The period as the resolution left it: COMPLETED, WAIVED or FAILED, its exception gone'));
/** A user's instruments (DESIGN 3.2): each with its holds (what set them), presentments and ACH entries. */
export const instrumentsSchema = z.object({
  user_id: z.string(),
  items: z.array(z.object({ ...instrumentSchema.shape, holds: z.array(z.object({ ...holdSchema.shape, operator_releasable: z.boolean() })), presentments: z.array(presentmentSchema), entries: z.array(achEntrySchema) })),
}).check(z.describe("A user's instruments and their holds"));

export const holdReleasedSchema = z.object({
  status: z.literal('released'),
  instrument_id: z.string(),
  hold_code: z.enum(HOLD_CODES),
  released_periods: z.int(),
  instruments: instrumentsSchema,
});

export const holdConflictSchema = conflictSchema(['hold_not_releasable'], 'hold_not_releasable: NACHA or the card networks decide this hold (decided_by names the rule), not an operator');

/** The ACH webhook (DESIGN 4.1): deliver it again later. */
export const achConflictSchema = conflictSchema(
  [NOT_YET_RECORDED, 'concurrent_modification', 'event_in_progress'],
  'not_yet_recorded: the outcome is for a submission the record does not show yet (the attempt is being repaired); ' +
    'event_in_progress: another delivery of this event id holds its claim; ' +
    'concurrent_modification: the record kept changing. Either way the sender delivers the event again.',
);

export const gatewayMessageSchema = z.strictObject({ message: z.string() }).check(z.describe("API Gateway's own answer (the JWT authorizer's 401/403, an unknown route's 404)"));

export const acceptedSchema = z.strictObject({ accepted: z.literal(true) });

export const achResultSchema = z.union([
  z.strictObject({
    status: z.literal('applied'),
    effect: z.string().check(z.describe('settled, exception (a settlement for another amount: flagged, not collected), represent, blocked, unauthorized, refunded, charged_back, returned, retry')),
    record_status: z.string(),
    reversed: z.optional(z.literal(true)).check(z.describe('the outcome reversed a completed collection (a return after settlement)')),
  }),
  z.strictObject({ status: z.literal('ignored'), reason: z.string() }),
  z.strictObject({ status: z.literal('duplicate') }).check(z.describe('a replay of an event id already processed: nothing applied again (DESIGN 15)')),
]);

/** A replayed webhook event id (DESIGN 15): answered without effect. */
export const duplicateSchema = z.strictObject({ status: z.literal('duplicate') });

export const stripeResultSchema = z.union([
  z.strictObject({ status: z.literal('duplicate') }),
  z.strictObject({ status: z.literal('processed'), outcome: z.string(), reason: z.optional(z.string()) }),
]);

/** Component name → schema; operations refer to them by name. */
export const RESPONSE_COMPONENTS = {
  BillingFailure: billingFailureViewSchema,
  Dunning: dunningViewSchema,
  Subscription: subscriptionViewSchema,
  HistoryRow: historyRowViewSchema,
  LoanPayment: loanPaymentViewSchema,
  SubscriptionPage: subscriptionPageSchema,
  HistoryPage: historyPageSchema,
  LoanPaymentPage: loanPaymentPageSchema,
  LoanPaymentHistoryRow: loanPaymentHistoryRowViewSchema,
  LoanPaymentHistoryPage: loanPaymentHistoryPageSchema,
  PayResult: payResultSchema,
  RetryBillingResult: retryBillingResultSchema,
  SubscriptionResult: subscriptionResultSchema,
  RetryRunCreated: retryRunCreatedSchema,
  RetryRun: retryRunSchema,
  Error: errorSchema,
  PaymentConflict: paymentConflictSchema,
  LoanPaymentConflict: loanPaymentConflictSchema,
  AchConflict: achConflictSchema,
  WaiveConflict: waiveConflictSchema,
  ResolveConflict: resolveConflictSchema,
  ResolveExceptionResult: resolveExceptionResultSchema,
  RetryRunList: retryRunListSchema,
  GatewayMessage: gatewayMessageSchema,
  Accepted: acceptedSchema,
  Duplicate: duplicateSchema,
  AchResult: achResultSchema,
  StripeResult: stripeResultSchema,
  Instruments: instrumentsSchema,
  HoldReleased: holdReleasedSchema,
  HoldConflict: holdConflictSchema,
  ReconciliationRunList: z.strictObject({ date: z.string(), items: z.array(reconciliationRunSchema), next: z.null() }),
  ReconciliationRunDetail: z.extend(reconciliationRunSchema, { exceptions: z.array(reconciliationExceptionSchema) }),
  ReconciliationException: reconciliationExceptionSchema,
} as const;

export type ResponseComponent = keyof typeof RESPONSE_COMPONENTS;
