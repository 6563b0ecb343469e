import type * as z from '../domain/zod.js';
import { actedBy, eventActor } from '../domain/actors.js';
import { classifyDecline, type DeclineDetails } from '../domain/declines.js';
import { applyCardOutcome, applyCheckoutCompleted } from '../domain/use-cases/apply-card-outcome.js';
import { refreshStripeCard } from '../domain/use-cases/refresh-stripe-card.js';
import { chargeRefundedMovement, disputeClosedMovement, disputeCreatedMovement, paymentSucceededMovement, type StripeEventStamp } from '../domain/card-movements.js';
import { decideChargeRefunded, decideDisputeClosed, decideDisputeCreated, decidePaymentFailed, decidePaymentSucceeded, PERIOD_CURRENCY, type CardPaymentReference, type CardResult } from '../domain/card-outcomes.js';
import { exceedsPaymentMaximum } from '../domain/payment-maximum.js';
import { processStripeEventOnce, recordStripeEventOnce } from '../domain/stripe-events.js';
import type { AppDeps } from '../runtime/deps.js';
import type { Logger } from '../runtime/logger.js';
import {
  cardDeclineMessage,
  cardReferenceSchema,
  chargeSchema,
  checkoutSessionSchema,
  customerSchema,
  declineDetailsOf,
  detachedFromSchema,
  disputeSchema,
  paymentIntentSchema,
  paymentMethodSchema,
  StripeSignatureVerificationError,
  stripeEventEnvelopeSchema,
  stripeWebhooks,
  type StripeEventEnvelope,
} from '../runtime/stripe-events.js';
import { errorBody, errorResponse, header, json, parseWith, rawBody, type HttpEvent, type HttpResult } from './shared/http.js';
import { safeParseCold } from '../domain/lazy-schema.js';

/** DESIGN 6: five minutes either side of the delivery time. */
export const STRIPE_SIGNATURE_TOLERANCE_S = 300;

/**
 * `POST /webhooks/stripe` (DESIGN 6, 2.8): verify the signature over the raw body (400), claim the
 * event (claimed elsewhere → 409, processed → 200 duplicate), apply it, mark it processed. Invalid
 * data would fail every redelivery too, so it is recorded and answered 200; only a processing
 * failure releases the claim and answers non-2xx, so that Stripe redelivers.
 */
export function createStripeWebhookHandler(deps: AppDeps): (event: HttpEvent) => Promise<HttpResult> {
  return async (event) => {
    const log = deps.logger.child({ handler: 'stripe-webhook', request_id: event.requestContext?.requestId });
    try {
      const body = rawBody(event);
      const verified = verifyStripeSignature(body, header(event, 'stripe-signature'), deps.secrets.stripeWebhook, deps.wallClock.now().getTime());
      if (!verified.ok) {
        log.warn({ reason: verified.reason }, 'stripe webhook signature rejected');
        return json(400, errorBody('invalid_signature', 'the Stripe-Signature header is missing, stale or does not match'));
      }
      const envelope = parseWith(stripeEventEnvelopeSchema, verified.event, 'invalid_event');
      const eventLog = log.child({ event_id: envelope.id, event_type: envelope.type });
      // A type it does not handle has nothing to apply: recorded processed in one write, no claim.
      const delivery = APPLIERS.has(envelope.type)
        ? await processStripeEventOnce(deps, envelope, () => applyStripeEvent({ ...deps, billing: actedBy(deps.billing, eventActor('stripe', envelope.id)) }, envelope, eventLog), {
            onReleaseError: (error) => eventLog.error({ err: error }, 'stripe event claim could not be released'),
          })
        : await recordStripeEventOnce<Applied>(deps, envelope, { outcome: 'unhandled' });
      switch (delivery.kind) {
        case 'duplicate':
          eventLog.info('stripe event already processed');
          return json(200, { status: 'duplicate' });
        case 'in_progress':
          return json(409, errorBody('event_in_progress', 'another delivery of this event is being processed; retry later'));
        case 'applied': {
          const { outcome, reason } = delivery.result;
          if (!delivery.marked) eventLog.warn('stripe event claim was taken over before it was marked processed');
          return json(200, { status: 'processed', outcome, ...(reason ? { reason } : {}) });
        }
      }
    } catch (error) {
      return errorResponse(error, log);
    }
  };
}

/* ---------------- signature ---------------- */

type Verified = { readonly ok: true; readonly event: unknown } | { readonly ok: false; readonly reason: string };

/**
 * The SDK checks the signature and the event's age against `receivedAt`, the wall clock (never the
 * simulated business clock: Stripe signs with real time, DESIGN 9); it does not refuse timestamps
 * from the future, so we do.
 */
function verifyStripeSignature(body: string, signature: string | undefined, secret: string, nowMs: number): Verified {
  if (!signature) return { ok: false, reason: 'missing' };
  const t = /(?:^|,)\s*t=(\d{1,12})(?:,|$)/.exec(signature)?.[1];
  if (t !== undefined && Number(t) - nowMs / 1000 > STRIPE_SIGNATURE_TOLERANCE_S) return { ok: false, reason: 'future_timestamp' };
  try {
    return { ok: true, event: stripeWebhooks.constructEvent(body, signature, secret, STRIPE_SIGNATURE_TOLERANCE_S, undefined, nowMs) };
  } catch (error) {
    if (error instanceof StripeSignatureVerificationError) return { ok: false, reason: 'mismatch_or_stale' };
    // Signed by Stripe but not JSON: nothing to process.
    if (error instanceof SyntaxError) return { ok: true, event: undefined };
    throw error;
  }
}

/* ---------------- applying one event ---------------- */

interface Applied {
  readonly outcome: 'applied' | 'ignored' | 'unhandled';
  readonly reason?: string;
}

/** What applying one event needs: the deps, its logger, and the lock owner for writes under the user's lock. */
interface EventContext {
  readonly deps: AppDeps;
  readonly log: Logger;
  readonly owner: string;
  /** The event's `data.previous_attributes`, when it has them. */
  readonly previous?: Record<string, unknown> | undefined;
  /** The event's id and Stripe's `created` instant: the day its money moved (DESIGN 14). */
  readonly stamp: StripeEventStamp;
}

type Apply = (object: unknown, ctx: EventContext, type: string) => Promise<Applied>;

/** Each handled type's applier; the handler records every other type without applying it. */
const APPLIERS = new Map<string, Apply>([
  ['checkout.session.completed', applyCheckout],
  ['payment_intent.succeeded', applyPaymentIntent],
  ['payment_intent.payment_failed', applyPaymentIntent],
  ['charge.refunded', applyChargeRefunded],
  ['charge.dispute.created', applyDisputeCreated],
  ['charge.dispute.closed', applyDisputeClosed],
  ['charge.dispute.funds_reinstated', applyDisputeClosed],
  ['customer.updated', applyCustomerUpdated],
  ['payment_method.attached', applyPaymentMethodEvent],
  ['payment_method.updated', applyPaymentMethodEvent],
  ['payment_method.detached', applyPaymentMethodEvent],
]);

async function applyStripeEvent(deps: AppDeps, event: StripeEventEnvelope, log: Logger): Promise<Applied> {
  const apply = APPLIERS.get(event.type);
  if (!apply) return { outcome: 'unhandled' };
  const occurredAt = event.created !== undefined ? new Date(event.created * 1000) : deps.clock.now();
  return apply(event.data.object, { deps, log, owner: `stripe:${event.id}`, stamp: { event_id: event.id, occurred_at: occurredAt }, previous: event.data.previous_attributes }, event.type);
}

/** A data object every redelivery would fail on too: logged and recorded without effect. */
function invalid(log: Logger, issues: z.core.$ZodIssue[]): Applied {
  log.warn({ issues: issues.map((i) => ({ path: i.path.join('.'), message: i.message })) }, 'stripe event data is invalid; recorded without effect');
  return { outcome: 'ignored', reason: 'invalid_data' };
}

async function applyCheckout(object: unknown, { deps, log, owner }: EventContext): Promise<Applied> {
  const parsed = safeParseCold(checkoutSessionSchema, object);
  if (!parsed.success) return invalid(log, parsed.error.issues);
  const { metadata } = parsed.data;
  // A trial (no_payment_required, amount_total 0) bills what its metadata names (DESIGN 6.1).
  const amountCents = metadata.amount ?? parsed.data.amount_total ?? 0;
  if (amountCents <= 0) {
    log.warn(
      { user_id: metadata.user_id, session: parsed.data.id, payment_status: parsed.data.payment_status ?? null, amount_total: parsed.data.amount_total ?? null },
      'checkout names no positive amount (neither metadata.amount nor amount_total); recorded without effect',
    );
    return { outcome: 'ignored', reason: 'no_amount' };
  }
  const maxCents = deps.settings.maxPaymentCents;
  if (exceedsPaymentMaximum(amountCents, maxCents)) {
    // A redelivery could not fix it: recorded as processed without effect, the reason logged.
    log.warn({ user_id: metadata.user_id, amount_cents: amountCents, max_payment_cents: maxCents }, 'checkout amount is above the payment maximum; recorded without effect');
    return { outcome: 'ignored', reason: 'amount_above_maximum' };
  }
  const result = await applyCheckoutCompleted(deps, {
    user_id: metadata.user_id,
    amount_cents: amountCents,
    tier: metadata.tier,
    term: metadata.term,
    first_billing_date: metadata.first_billing_date,
    friday_billing: metadata.friday_billing,
  }, owner);
  // The card is stored apart from the chain: a replay or an existing member still updates it.
  if (parsed.data.customer) await storeCard(deps, log, parsed.data.customer, metadata.user_id);
  return reported(log, result);
}

async function applyPaymentIntent(object: unknown, { deps, log, owner, stamp }: EventContext, type: string): Promise<Applied> {
  const parsed = safeParseCold(paymentIntentSchema, object);
  if (!parsed.success) return invalid(log, parsed.error.issues);
  const intent = parsed.data;
  const input = { payment_intent_id: intent.id, reference: intent.metadata, amount_cents: intent.amount };
  const succeeded = { ...input, received_cents: intent.amount_received ?? intent.amount, currency: intent.currency ?? PERIOD_CURRENCY };
  const result =
    type === 'payment_intent.succeeded'
      ? await applyCardOutcome(deps, decidePaymentSucceeded, succeeded, owner, paymentSucceededMovement(stamp, succeeded))
      : await applyCardOutcome(deps, decidePaymentFailed, {
          ...input,
          message: cardDeclineMessage(intent.last_payment_error?.decline_code, intent.last_payment_error?.code),
          decline: declineOf(log, intent.last_payment_error),
        }, owner);
  return reported(log, result);
}

async function applyChargeRefunded(object: unknown, { deps, log, owner, stamp }: EventContext): Promise<Applied> {
  const parsed = safeParseCold(chargeSchema, object);
  if (!parsed.success) return invalid(log, parsed.error.issues);
  const charge = parsed.data;
  const reference = await referenceOf(deps, charge.metadata, charge.payment_intent);
  if (!reference || !charge.payment_intent) return unlocated(log, charge.payment_intent);
  const refund = { payment_intent_id: charge.payment_intent, reference, amount_cents: charge.amount, fully_refunded: charge.refunded };
  const result = await applyCardOutcome(deps, decideChargeRefunded, refund, owner, chargeRefundedMovement(stamp, { ...refund, refunded_cents: charge.amount_refunded }));
  return reported(log, result);
}

async function applyDisputeCreated(object: unknown, { deps, log, owner, stamp }: EventContext): Promise<Applied> {
  const parsed = safeParseCold(disputeSchema, object);
  if (!parsed.success) return invalid(log, parsed.error.issues);
  const dispute = parsed.data;
  const reference = await referenceOf(deps, dispute.metadata, dispute.payment_intent);
  if (!reference || !dispute.payment_intent) return unlocated(log, dispute.payment_intent);
  const disputed = {
    payment_intent_id: dispute.payment_intent,
    reference,
    amount_cents: dispute.amount,
    dispute_id: dispute.id,
    // An absent status is read as funds withdrawn, the stricter of the two.
    status: dispute.status ?? 'needs_response',
  };
  const result = await applyCardOutcome(deps, decideDisputeCreated, disputed, owner, disputeCreatedMovement(stamp, disputed));
  return reported(log, result);
}

/** A dispute won (closed `won`, or its funds reinstated) lifts the period's dispute hold; a lost one changes nothing. */
async function applyDisputeClosed(object: unknown, { deps, log, owner, stamp }: EventContext, type: string): Promise<Applied> {
  const parsed = safeParseCold(disputeSchema, object);
  if (!parsed.success) return invalid(log, parsed.error.issues);
  const dispute = parsed.data;
  const reference = await referenceOf(deps, dispute.metadata, dispute.payment_intent);
  if (!reference || !dispute.payment_intent) return unlocated(log, dispute.payment_intent);
  const closed = {
    payment_intent_id: dispute.payment_intent,
    reference,
    amount_cents: dispute.amount,
    dispute_id: dispute.id,
    won: type === 'charge.dispute.funds_reinstated' || dispute.status === 'won',
  };
  const result = await applyCardOutcome(deps, decideDisputeClosed, closed, owner, disputeClosedMovement(stamp, closed));
  return reported(log, result);
}

/* ---------------- the card instrument (DESIGN 3.2) ---------------- */

async function applyCustomerUpdated(object: unknown, { deps, log }: EventContext): Promise<Applied> {
  const parsed = safeParseCold(customerSchema, object);
  if (!parsed.success) return invalid(log, parsed.error.issues);
  return storeCard(deps, log, parsed.data.id);
}

/** Attached, updated or detached: the customer it belongs to (a detached card names it in previous_attributes) is read again. */
async function applyPaymentMethodEvent(object: unknown, { deps, log, previous }: EventContext): Promise<Applied> {
  const parsed = safeParseCold(paymentMethodSchema, object);
  if (!parsed.success) return invalid(log, parsed.error.issues);
  const was = safeParseCold(detachedFromSchema, previous ?? {});
  const customer = parsed.data.customer ?? (was.success ? was.data.customer : undefined);
  if (!customer) {
    log.info({ payment_method: parsed.data.id }, 'payment method names no customer; nothing to store');
    return { outcome: 'ignored', reason: 'no_customer' };
  }
  return storeCard(deps, log, typeof customer === 'string' ? customer : customer.id);
}

async function storeCard(deps: AppDeps, log: Logger, customerId: string, userIdHint?: string): Promise<Applied> {
  const result = await refreshStripeCard(deps, customerId, userIdHint);
  if (result.kind === 'ignored') {
    log.warn({ customer: customerId, reason: result.reason }, 'stripe card not stored');
    return { outcome: 'ignored', reason: result.reason };
  }
  log.info({ user_id: result.user_id, customer: customerId, card_known: result.card.payment_method !== undefined }, 'stripe card stored');
  return { outcome: 'applied' };
}

/** The decline's codes for dunning; a code the table does not know is retry_later and logged. */
function declineOf(log: Logger, failure: Parameters<typeof declineDetailsOf>[0] | null | undefined): DeclineDetails {
  const decline = declineDetailsOf(failure ?? {});
  if (!classifyDecline(decline).known) log.warn({ decline_code: decline.decline_code }, 'unknown decline code; classified retry_later');
  return decline;
}

/** The record's key from the object's own metadata, else from its PaymentIntent (disputes carry no metadata). */
async function referenceOf(
  deps: AppDeps,
  metadata: Record<string, string> | null | undefined,
  paymentIntentId: string | null | undefined,
): Promise<CardPaymentReference | undefined> {
  const own = safeParseCold(cardReferenceSchema, metadata ?? {});
  if (own.success) return own.data;
  if (!paymentIntentId || !deps.cardPayments) return undefined;
  return deps.cardPayments.findReference(paymentIntentId);
}

function unlocated(log: Logger, paymentIntentId: string | null | undefined): Applied {
  log.error({ payment_intent: paymentIntentId ?? null }, 'stripe event names no billing record we can find; recorded without effect');
  return { outcome: 'ignored', reason: 'record_not_located' };
}

function reported(log: Logger, result: CardResult): Applied {
  if (result.kind === 'applied') {
    const context = { user_id: result.record.user_id, subscription_id: result.record.subscription_id, billing_status: result.record.billing_status };
    if (result.exception) {
      // Flagged for operators (?billing=exceptions), never a completion or a failure (DESIGN 6.1).
      log.warn({ ...context, exception: result.exception }, 'stripe outcome does not match the period; flagged as an exception');
      return { outcome: 'applied', reason: `exception:${result.exception}` };
    }
    log.info(context, 'stripe event applied');
    return { outcome: 'applied' };
  }
  const context = result.record ? { user_id: result.record.user_id, subscription_id: result.record.subscription_id, billing_status: result.record.billing_status } : {};
  // A second PaymentIntent succeeding for a completed period is a double charge: a person must refund it.
  const level = result.reason === 'transaction_mismatch' ? 'error' : result.reason === 'already_applied' ? 'info' : 'warn';
  log[level]({ ...context, reason: result.reason }, 'stripe event ignored');
  return { outcome: 'ignored', reason: result.reason };
}
