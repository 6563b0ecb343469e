import type { PaymentResult } from '../ports/processor.js';
import type { BillingRecord, DeclineClass } from '../records.js';
import { HOLD_RULES } from './holds.js';
import { stripeCardInstrument, type Hold, type Instrument, type InstrumentsItem, type InstrumentWrite, type StripeCard } from './instrument.js';

/** A hold on a Stripe card the attempt resolved itself (DESIGN 3.2): a stored card is held by the instrument's own decline hold. */

/** A `do_not_retry` decline holds the card it declined until another card is stored. */
export function cardNeverHold(
  card: StripeCard | undefined,
  decline: { readonly decline_code: string; readonly decline_class: DeclineClass },
  reference: string,
  now: string,
): Hold | undefined {
  const instrument = stripeCardInstrument(card);
  if (!instrument || decline.decline_class !== 'do_not_retry') return undefined;
  const rule = HOLD_RULES.card_never;
  return {
    code: rule.code,
    class: rule.class,
    rule: rule.decided_by,
    instrument_id: instrument.instrument_id,
    since: now,
    set_by: { kind: 'decline', decline_code: decline.decline_code, reference },
  };
}

/**
 * The card's part of the attempt's write: a card the processor had to resolve is stored, so the next
 * attempt asks Stripe nothing (in place of a stored customer without a card, else only if a webhook
 * stored none meanwhile); a `do_not_retry` decline holds the card it declined.
 */
export function cardInstrumentWrite(
  read: BillingRecord,
  after: BillingRecord,
  result: PaymentResult,
  instruments: InstrumentsItem | undefined,
  instrument: Instrument | undefined,
): InstrumentWrite | undefined {
  if (result.outcome === 'submitted') return undefined;
  const card = result.resolved_card ?? instruments?.stripe_card;
  // A card the attempt knew is held by the instrument's own decline hold; only a resolved one is held here.
  const hold =
    !instrument && result.outcome === 'declined' && after.decline_class !== undefined
      ? cardNeverHold(card, { decline_code: after.decline_code ?? result.decline_code, decline_class: after.decline_class }, `subscription:${read.subscription_id}`, after.last_run_date)
      : undefined;
  if (!result.resolved_card && !hold) return undefined;
  return {
    user_id: read.user_id,
    ...(result.resolved_card ? { stripe_card: { card: result.resolved_card, replace: instruments?.stripe_card !== undefined } } : {}),
    ...(hold ? { holds: [hold] } : {}),
  };
}

/** A dispute with the funds withdrawn holds the card its payment was on, until it is won or an operator releases it (DESIGN 3.2). */
export function cardDisputeHoldWrite(
  userId: string,
  instrumentId: string | undefined,
  dispute: { readonly dispute_id: string; readonly payment_intent_id: string; readonly reference: string },
  since: string,
): InstrumentWrite | undefined {
  // A payment from before instruments names no card: its period's own hold binds it, never copied onto a card.
  if (instrumentId === undefined) return undefined;
  const rule = HOLD_RULES.card_dispute;
  return {
    user_id: userId,
    holds: [{ code: rule.code, class: rule.class, rule: rule.decided_by, instrument_id: instrumentId, since, set_by: { kind: 'dispute', dispute_id: dispute.dispute_id, confirmation_id: dispute.payment_intent_id, reference: dispute.reference } }],
  };
}

/** A dispute won lifts the card's dispute hold. */
export function cardDisputeReleaseWrite(userId: string, instrumentId: string | undefined): InstrumentWrite | undefined {
  return instrumentId === undefined ? undefined : { user_id: userId, releases: [{ instrument_id: instrumentId, code: HOLD_RULES.card_dispute.code }] };
}

/** The card a payment was made with: the stored one the attempt named, else the one the processor resolved. */
export function chargedInstrument(instrument: Instrument | undefined, result: PaymentResult): { instrument_id?: string } {
  const charged = instrument ?? (result.outcome === 'submitted' ? undefined : stripeCardInstrument(result.resolved_card));
  return charged ? { instrument_id: charged.instrument_id } : {};
}
