import { loanAchHold } from '../ach-outcomes.js';
import type { LoanPayment } from '../loan-payments.js';
import type { AccountDirectory } from '../ports/account-directory.js';
import { formatInstant } from '../time.js';
import { cardNeverHoldOn, presentmentEntry } from './attempt.js';
import { CEILING_CODE, cardCeilingReached, type Initiated } from './ceilings.js';
import { currentInstrument, entryLimitReached, instrumentHold, refusalOf, type InstrumentRefusal } from './gate.js';
import type { DeclineClass } from '../records.js';
import { entryIdOf, type Instrument, type InstrumentsItem, type InstrumentWrite } from './instrument.js';

/**
 * The loan paths' instrument (DESIGN 3.2): the account directory's answer and the user's instruments
 * item, read with the payment in one request (PaymentsStore.getForAttempt) as a period's attempt reads it.
 */

export interface LoanInstrumentDeps {
  readonly accounts: AccountDirectory;
}

export interface LoanInstrumentDecision {
  readonly instrument: Instrument | undefined;
  readonly refusal?: InstrumentRefusal;
  /** The item as read: the presentment's write prunes it. */
  readonly item: InstrumentsItem;
}

export async function decideLoanInstrument(
  deps: LoanInstrumentDeps,
  payment: LoanPayment | Pick<LoanPayment, 'loc_user_id' | 'loc_payment_id' | 'loc_payment_method' | 'loc_account_last_four'>,
  item: InstrumentsItem,
  recentNewestFirst: readonly LoanPayment[],
  now: Date,
  initiated: Initiated,
  signal?: AbortSignal,
): Promise<LoanInstrumentDecision> {
  const account = await deps.accounts.getAccount(payment.loc_user_id, signal);
  const instrument = currentInstrument(account, payment.loc_payment_method);
  const onInstrument = instrumentHold(item, instrument);
  if (onInstrument) return { instrument, item, refusal: onInstrument };
  if ('loc_ach_represented' in payment && (payment.loc_ach_represented ?? 0) > 0) {
    const limit = entryLimitReached(item, entryIdOf({ kind: 'loan_payment', payment_id: payment.loc_payment_id }), now);
    if (limit) return { instrument, item, refusal: limit };
  }
  // Returns recorded before instruments keep binding the account they were on (by its last four digits).
  const legacy = loanAchHold(payment, recentNewestFirst);
  if (legacy) return { instrument, item, refusal: refusalOf(legacy) };
  const ceiling = cardCeilingReached(item, instrument, initiated, now);
  return ceiling ? { instrument, item, refusal: { code: CEILING_CODE, ...ceiling } } : { instrument, item };
}

/** What a loan payment's presentment adds to the instruments item (declined or not), written in the payment's own transaction. */
export function loanPresentmentWrite(
  read: LoanPayment,
  instrument: Instrument | undefined,
  now: Date,
  initiated: Initiated,
  outcome: { readonly decline_class?: DeclineClass | undefined; readonly decline_code?: string | undefined; readonly item?: InstrumentsItem | undefined } = {},
): InstrumentWrite | undefined {
  if (!instrument) return undefined;
  const at = formatInstant(now);
  const entryId = entryIdOf({ kind: 'loan_payment', payment_id: read.loc_payment_id });
  const entry = { entry_id: entryId, instrument_id: instrument.instrument_id, first_entry_at: read.loc_ach_original_entry_date ?? at };
  const representing = instrument.rail === 'ach' && (read.loc_ach_represented ?? 0) > 0;
  return {
    user_id: read.loc_user_id,
    seen: [{ ...instrument, first_seen_at: at }],
    presentments: [presentmentEntry(outcome.item, instrument.instrument_id, { at, initiated, reference: entryId, ...(outcome.decline_class !== undefined ? { decline_class: outcome.decline_class } : {}) }, now)],
    ...(instrument.rail === 'ach' ? (representing ? { representments: [entry] } : { entries: [entry] }) : {}),
    // A card declined as never to be approved is held for the periods too, as a period's decline holds it.
    ...(instrument.rail !== 'ach' && outcome.decline_class === 'do_not_retry' ? { holds: [cardNeverHoldOn(instrument.instrument_id, outcome.decline_code, `loan:${read.loc_payment_id}`, at)] } : {}),
  };
}

