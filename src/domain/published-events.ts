import * as z from './zod.js';
import { lazySchema, safeParseCold } from './lazy-schema.js';
import { dunningState } from './dunning.js';
import { billingFailureView } from './ladder.js';
import { centsSchema } from './money.js';
import { HOLD_CODES } from './instruments/holds.js';
import {
  billingStatusSchema,
  declineClassSchema,
  paymentMethodSchema,
  processSchema,
  type HistoryRow,
} from './records.js';

/** What the rest of the business hears about billing (DESIGN 11): one schema per detail-type, read off the audit rows. */

export const EVENT_SOURCE = 'billing';

export const DETAIL_TYPES = [
  'billing.period.collected',
  'billing.period.submitted',
  'billing.period.declined',
  'billing.dunning.exhausted',
  'billing.failure.parked',
  'billing.ach.returned',
  'billing.period.refunded',
  'billing.period.waived',
  'billing.period.cancelled',
  'billing.exception.raised',
  'billing.instrument.held',
] as const;
export const detailTypeSchema = lazySchema(() => z.enum(DETAIL_TYPES));
export type DetailType = z.infer<typeof detailTypeSchema>;

const text = lazySchema(() => z.string().check(z.minLength(1)));

/** What every event's detail carries (DESIGN 11), plus who acted and why where a person did. */
const commonDetail = lazySchema(() => z.object({
  /** Derived from the history row's key (and the detail-type): a redelivered stream record yields the same id. */
  event_id: text,
  user_id: text,
  subscription_id: text,
  billing_date: text,
  billing_status: billingStatusSchema,
  amount_cents: centsSchema,
  /** When the change was written (business time). */
  occurred_at: text,
  process: processSchema,
  payment_method: paymentMethodSchema,
  actor: z.optional(text),
  reason: z.optional(text),
  run_id: z.optional(text),
  /**
   * The period record's `version` after the change (DESIGN 11): a consumer orders one period's
   * events by (sequence, ordinal) and drops one older than what it holds. Gaps are normal.
   */
  sequence: z.int().check(z.nonnegative()),
  /** The event's position among the events of one audit row, from 0. */
  ordinal: z.int().check(z.nonnegative()),
}));

/** What instrument events carry instead: no sequence, their `since` and event id order them. */
const unsequencedDetail = lazySchema(() => z.omit(commonDetail, { sequence: true, ordinal: true }));

const dunningDetail = lazySchema(() => z.object({
  state: z.enum(['retrying', 'exhausted']),
  attempts: z.int().check(z.nonnegative()),
  next_attempt_at: z.nullable(text),
}));

/** An operator accepted an exception's money as the payment: what was received, and received minus owed (negative: a shortfall). */
const acceptedDetail = () => ({
  resolution: z.optional(z.literal('accept')),
  amount_received_cents: z.optional(centsSchema),
  amount_difference_cents: z.optional(z.int()),
});
export const collectedDetailSchema = lazySchema(() => z.object({ ...commonDetail.shape, transaction_id: z.optional(text), ...acceptedDetail() }));
export const submittedDetailSchema = lazySchema(() => z.object({ ...commonDetail.shape, transaction_id: z.optional(text) }));
export const declinedDetailSchema = lazySchema(() => z.object({
  ...commonDetail.shape,
  transaction_id: z.optional(text),
  payment_error: z.string(),
  decline_code: z.optional(text),
  decline_class: z.optional(declineClassSchema),
  /** Absent for a decline outside dunning (a closed balance gate on a period never declined by the bank). */
  dunning: z.optional(dunningDetail),
}));
export const dunningExhaustedDetailSchema = lazySchema(() => z.object({
  ...commonDetail.shape,
  decline_code: z.optional(text),
  decline_class: declineClassSchema,
  attempts: z.int().check(z.nonnegative()),
  /** declined: a decline left no attempt (its class, or the last slot); window_ended: the 14-day window ended with no run to take the slot left. */
  cause: z.enum(['declined', 'window_ended']),
}));
export const failureParkedDetailSchema = lazySchema(() => z.object({
  ...commonDetail.shape,
  failure: z.object({ count: z.int().check(z.positive()), failed_at: text, last_error: z.string() }),
}));
export const achReturnedDetailSchema = lazySchema(() => z.object({
  ...commonDetail.shape,
  transaction_id: z.optional(text),
  /** NACHA return code; absent for a chargeback, which names none. */
  return_code: z.optional(text),
  /** An unauthorized return or chargeback (never retried automatically). */
  unauthorized: z.boolean(),
  /** The period may be debited again (R01/R09 within the re-presentment limit). */
  represent: z.boolean(),
  payment_error: z.string(),
}));
export const refundedDetailSchema = lazySchema(() => z.object({ ...commonDetail.shape, transaction_id: z.optional(text) }));
export const waivedDetailSchema = lazySchema(() => z.object({ ...commonDetail.shape, resolution: z.optional(z.literal('waive')) }));
export const cancelledDetailSchema = lazySchema(() => z.object({
  ...commonDetail.shape,
  /** A cancel the member asked for, completed at the billing date, or a closed account. */
  cause: z.enum(['cancel_requested', 'account_closed']),
}));
export const exceptionRaisedDetailSchema = lazySchema(() => z.object({
  ...commonDetail.shape,
  exception: z.object({
    source: z.enum(['ach', 'card']),
    /** card_disputed: funds withdrawn; unowed_payment: a payment for a written-off period, to refund. */
    code: z.enum(['amount_mismatch', 'currency_mismatch', 'dispute_inquiry', 'card_disputed', 'unowed_payment']),
    received_cents: z.optional(centsSchema),
    currency: z.optional(text),
    payment_intent_id: z.optional(text),
    /** ACH unowed_payment: the settled entry. */
    confirmation_id: z.optional(text),
    dispute_id: z.optional(text),
    dispute_status: z.optional(text),
  }),
}));

/** A hold set on an instrument (DESIGN 3.2) by the change this row records. */
export const instrumentHeldDetailSchema = lazySchema(() => z.object({
  ...unsequencedDetail.shape,
  instrument_id: text,
  hold_code: z.enum(HOLD_CODES),
  since: text,
}));

export const DETAIL_SCHEMAS = {
  'billing.period.collected': collectedDetailSchema,
  'billing.period.submitted': submittedDetailSchema,
  'billing.period.declined': declinedDetailSchema,
  'billing.dunning.exhausted': dunningExhaustedDetailSchema,
  'billing.failure.parked': failureParkedDetailSchema,
  'billing.ach.returned': achReturnedDetailSchema,
  'billing.period.refunded': refundedDetailSchema,
  'billing.period.waived': waivedDetailSchema,
  'billing.period.cancelled': cancelledDetailSchema,
  'billing.exception.raised': exceptionRaisedDetailSchema,
  'billing.instrument.held': instrumentHeldDetailSchema,
} as const satisfies Record<DetailType, z.ZodMiniType>;

const envelope = <T extends DetailType>(detailType: T) =>
  z.object({ source: z.literal(EVENT_SOURCE), 'detail-type': z.literal(detailType), detail: DETAIL_SCHEMAS[detailType] });

/** A published event as a consumer receives it (the EventBridge envelope's `source`, `detail-type`, `detail`). */
export const publishedEventSchema = lazySchema(() => z.discriminatedUnion('detail-type', [
  envelope('billing.period.collected'),
  envelope('billing.period.submitted'),
  envelope('billing.period.declined'),
  envelope('billing.dunning.exhausted'),
  envelope('billing.failure.parked'),
  envelope('billing.ach.returned'),
  envelope('billing.period.refunded'),
  envelope('billing.period.waived'),
  envelope('billing.period.cancelled'),
  envelope('billing.exception.raised'),
  envelope('billing.instrument.held'),
]));
export type PublishedEvent = z.infer<typeof publishedEventSchema>;
export type DetailOf<T extends DetailType> = z.infer<(typeof DETAIL_SCHEMAS)[T]>;

export interface EventIdInput {
  readonly user_id: string;
  readonly last_run_date: string;
  readonly detail_type: DetailType;
}

/** Deterministic (the publisher's is a name-based UUID). */
export type EventIdOf = (input: EventIdInput) => string;

/** A history row whose content contradicts the event it names: logged and reported, never published half-right. */
export class UnpublishableRowError extends Error {
  override readonly name = 'UnpublishableRowError';
  constructor(
    readonly row: Pick<HistoryRow, 'user_id' | 'last_run_date' | 'subscription_id'>,
    readonly issues: readonly string[],
  ) {
    super(`history row (user_id=${row.user_id}, last_run_date=${row.last_run_date}) cannot be published: ${issues.join('; ')}`);
  }
}

/** The events of one audit row, in a stable order, each validated; a row naming no published event maps to none. */
export function publishedEventsOf(row: HistoryRow, eventIdOf: EventIdOf): PublishedEvent[] {
  const events: PublishedEvent[] = [];
  addEventsOf(row, (detailType, extra) => {
    const parsed = safeParseCold(DETAIL_SCHEMAS[detailType], { ...commonDetailOf(row, eventIdOf, detailType), sequence: row.version, ordinal: events.length, ...extra });
    if (!parsed.success) {
      throw new UnpublishableRowError(row, parsed.error.issues.map((i) => `${detailType} ${i.path.join('.') || '(detail)'}: ${i.message}`));
    }
    events.push({ source: EVENT_SOURCE, 'detail-type': detailType, detail: parsed.data } as PublishedEvent);
  });
  if (row.held_instrument_id !== undefined && row.hold_code !== undefined && row.hold_since !== undefined) {
    const detail = { ...commonDetailOf(row, eventIdOf, 'billing.instrument.held'), instrument_id: row.held_instrument_id, hold_code: row.hold_code, since: row.hold_since };
    const parsed = safeParseCold(instrumentHeldDetailSchema, detail);
    if (!parsed.success) throw new UnpublishableRowError(row, parsed.error.issues.map((i) => `billing.instrument.held ${i.path.join('.')}: ${i.message}`));
    events.push({ source: EVENT_SOURCE, 'detail-type': 'billing.instrument.held', detail: parsed.data });
  }
  return events;
}

function commonDetailOf(row: HistoryRow, eventIdOf: EventIdOf, detailType: DetailType) {
  return {
    event_id: eventIdOf({ user_id: row.user_id, last_run_date: row.last_run_date, detail_type: detailType }),
    user_id: row.user_id,
    subscription_id: row.subscription_id,
    billing_date: row.billing_date,
    billing_status: row.billing_status,
    amount_cents: row.amount_cents,
    occurred_at: row.last_run_date,
    process: row.process,
    payment_method: row.payment_method,
    ...present({ actor: row.actor, reason: row.reason, run_id: row.run_id }),
  };
}

type AddEvent = <T extends DetailType>(detailType: T, extra: Omit<DetailOf<T>, keyof ReturnType<typeof commonDetailOf> | 'sequence' | 'ordinal'>) => void;

function addEventsOf(row: HistoryRow, add: AddEvent): void {
  const transaction = present({ transaction_id: row.transaction_id });
  switch (row.billing_event) {
    case 'COLLECTED':
    case 'ACH_SETTLED':
    case 'DISPUTE_WON':
      return add('billing.period.collected', transaction);
    case 'ACH_SUBMITTED':
      return add('billing.period.submitted', transaction);
    case 'DECLINED':
      return addDeclined(row, add);
    case 'DUNNING_EXHAUSTED':
      if (dunningState(row) !== 'exhausted') throw new UnpublishableRowError(row, ['DUNNING_EXHAUSTED row is not an exhausted dunning period']);
      return add('billing.dunning.exhausted', { decline_class: row.decline_class!, attempts: row.dunning_attempts ?? 0, cause: 'window_ended', ...present({ decline_code: row.decline_code }) });
    case 'BILLING_FAILURE_RECORDED': {
      const failure = billingFailureView(row);
      if (failure?.state === 'parked') add('billing.failure.parked', { failure: { count: failure.count, failed_at: failure.failed_at, last_error: failure.last_error } });
      return;
    }
    case 'ACH_RETURNED':
    case 'CHARGED_BACK':
      return addReturned(row, add);
    case 'REFUNDED':
      return add('billing.period.refunded', transaction);
    case 'WAIVED':
      return add('billing.period.waived', {});
    case 'EXCEPTION_ACCEPTED':
      return add('billing.period.collected', {
        ...transaction,
        resolution: 'accept',
        ...present({ amount_received_cents: row.amount_received_cents, amount_difference_cents: row.amount_difference_cents }),
      });
    case 'EXCEPTION_WAIVED':
      return add('billing.period.waived', { resolution: 'waive' });
    case 'CANCEL_COMPLETED':
      return add('billing.period.cancelled', { cause: 'cancel_requested' });
    case 'ACCOUNT_CLOSED':
      return add('billing.period.cancelled', { cause: 'account_closed' });
    case 'EXCEPTION_RAISED':
      return add('billing.exception.raised', { exception: raisedException(row) });
    default:
      return;
  }
}

function addDeclined(row: HistoryRow, add: AddEvent): void {
  const state = dunningState(row);
  add('billing.period.declined', {
    ...present({ transaction_id: row.transaction_id }),
    payment_error: row.payment_error ?? '',
    ...present({ decline_code: row.decline_code, decline_class: row.decline_class }),
    ...(state ? { dunning: { state, attempts: row.dunning_attempts ?? 0, next_attempt_at: state === 'retrying' ? row.dunning_next_attempt_at! : null } } : {}),
  });
  if (state === 'exhausted') {
    add('billing.dunning.exhausted', { decline_class: row.decline_class!, attempts: row.dunning_attempts ?? 0, cause: 'declined', ...present({ decline_code: row.decline_code }) });
  }
}

function addReturned(row: HistoryRow, add: AddEvent): void {
  if (row.payment_method === 'card') {
    // A card dispute with the funds withdrawn: the period owes again and no automatic path charges the card.
    add('billing.exception.raised', { exception: { source: 'card', code: 'card_disputed', ...present({ payment_intent_id: row.transaction_id }) } });
    return;
  }
  add('billing.ach.returned', {
    ...present({ transaction_id: row.transaction_id }),
    ...present({ return_code: row.ach_return_code }),
    unauthorized: row.ach_unauthorized === true,
    represent: row.ach_unauthorized !== true && row.ach_blocked !== true,
    payment_error: row.payment_error ?? '',
  });
}

/** The exception this row raised: the newer of the two a period can carry. */
function raisedException(row: HistoryRow): DetailOf<'billing.exception.raised'>['exception'] {
  const ach = row.ach_exception;
  const card = row.card_exception;
  if (ach && (!card || ach.at >= card.at)) return { source: 'ach', code: ach.code, received_cents: ach.received_cents, ...present({ confirmation_id: ach.confirmation_id }) };
  if (!card) throw new UnpublishableRowError(row, ['EXCEPTION_RAISED names no ach_exception or card_exception']);
  return {
    source: 'card',
    code: card.code,
    ...present({
      received_cents: card.received_cents,
      currency: card.currency,
      payment_intent_id: card.payment_intent_id,
      dispute_id: card.dispute_id,
      dispute_status: card.dispute_status,
    }),
  };
}

/** The defined entries only: an absent attribute stays absent in the detail, never `null` or "". */
function present<T extends Record<string, unknown>>(values: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined && v !== '')) as { [K in keyof T]?: Exclude<T[K], undefined> };
}

/** What became of one event put on the bus. */
export type PublishOutcome =
  | { readonly ok: true; readonly eventBridgeId: string; readonly attempts: number }
  | { readonly ok: false; readonly code: string; readonly message: string; readonly attempts: number };

/** One outcome per event, in order. */
export interface EventPublisher {
  publish(events: readonly PublishedEvent[]): Promise<PublishOutcome[]>;
}
