import { loanAchHold } from '../ach-outcomes.js';
import type { LoanPayment } from '../loan-payments.js';
import type { AccountDirectory } from '../ports/account-directory.js';
import type { InstrumentStore } from '../ports/instruments.js';
import { formatInstant } from '../time.js';
import { currentInstrument, entryLimitReached, instrumentHold, refusalOf, type InstrumentRefusal } from './gate.js';
import { entryIdOf, type Instrument, type InstrumentWrite } from './instrument.js';

/** The loan paths' instrument (DESIGN 3.2): the account directory's answer and the user's instruments item, as a period's attempt reads them. */

export interface LoanInstrumentDeps {
  readonly accounts: AccountDirectory;
  readonly instruments: Pick<InstrumentStore, 'get' | 'write'>;
}

export interface LoanInstrumentDecision {
  readonly instrument: Instrument | undefined;
  readonly refusal?: InstrumentRefusal;
}

export async function decideLoanInstrument(
  deps: LoanInstrumentDeps,
  payment: LoanPayment | Pick<LoanPayment, 'loc_user_id' | 'loc_payment_id' | 'loc_payment_method' | 'loc_account_last_four'>,
  recentNewestFirst: readonly LoanPayment[],
  now: Date,
  signal?: AbortSignal,
): Promise<LoanInstrumentDecision> {
  const [account, item] = await Promise.all([deps.accounts.getAccount(payment.loc_user_id, signal), deps.instruments.get(payment.loc_user_id)]);
  const instrument = currentInstrument(account, payment.loc_payment_method);
  const onInstrument = instrumentHold(item, instrument);
  if (onInstrument) return { instrument, refusal: onInstrument };
  if ('loc_ach_represented' in payment && (payment.loc_ach_represented ?? 0) > 0) {
    const limit = entryLimitReached(item, entryIdOf({ kind: 'loan_payment', payment_id: payment.loc_payment_id }), now);
    if (limit) return { instrument, refusal: limit };
  }
  // Returns recorded before instruments keep binding the account they were on (by its last four digits).
  const legacy = loanAchHold(payment, recentNewestFirst);
  return legacy ? { instrument, refusal: refusalOf(legacy) } : { instrument };
}

/** What a loan payment's presentment adds to the instruments item, written beside the payment's own write. */
export function loanPresentmentWrite(read: LoanPayment, instrument: Instrument | undefined, now: Date, initiated: 'merchant' | 'customer'): InstrumentWrite | undefined {
  if (!instrument) return undefined;
  const at = formatInstant(now);
  const entryId = entryIdOf({ kind: 'loan_payment', payment_id: read.loc_payment_id });
  const entry = { entry_id: entryId, instrument_id: instrument.instrument_id, first_entry_at: read.loc_ach_original_entry_date ?? at };
  const representing = instrument.rail === 'ach' && (read.loc_ach_represented ?? 0) > 0;
  return {
    user_id: read.loc_user_id,
    seen: [{ ...instrument, first_seen_at: at }],
    presentments: [{ instrument_id: instrument.instrument_id, presentment: { at, initiated, reference: entryId } }],
    ...(instrument.rail === 'ach' ? (representing ? { representments: [entry] } : { entries: [entry] }) : {}),
  };
}
