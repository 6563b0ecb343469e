import { IllegalTransitionError } from './errors.js';
import type { BillingEvent, BillingStatus } from './records.js';
import type { LoanPaymentStatus } from './loan-payments.js';

type Rule<S extends string> = { readonly from: readonly S[]; readonly to: S | 'same' };

/** A transition table: from-status × event → to-status. Anything not listed is an IllegalTransitionError. */
export class TransitionTable<S extends string, E extends string> {
  constructor(
    readonly machine: string,
    private readonly rules: Readonly<Record<E, Rule<S>>>,
  ) {}

  /** The status after `event`, or an IllegalTransitionError. */
  apply(from: S, event: E): S {
    const rule = this.ruleFor(event);
    if (!rule || !rule.from.includes(from)) throw new IllegalTransitionError(this.machine, from, event);
    return rule.to === 'same' ? from : rule.to;
  }

  allows(from: S, event: E): boolean {
    const rule = this.ruleFor(event);
    return !!rule && rule.from.includes(from);
  }

  // Own keys only: an unvalidated event such as "constructor" must not reach Object.prototype.
  private ruleFor(event: E): Rule<S> | undefined {
    return Object.hasOwn(this.rules, event) ? this.rules[event] : undefined;
  }

  events(): E[] {
    return Object.keys(this.rules) as E[];
  }

  /** The statuses `event` may leave. */
  sourcesOf(event: E): readonly S[] {
    return this.ruleFor(event)?.from ?? [];
  }

  /** The events allowed from `status`. */
  exitsOf(status: S): E[] {
    return this.events().filter((event) => this.allows(status, event));
  }
}

/** Listed in records.ts, beside the history row that names them. */
export type { BillingEvent };

export const billingTransitions = new TransitionTable<BillingStatus, BillingEvent>('billing_status', {
  COLLECTED: { from: ['PENDING', 'FAILED'], to: 'COMPLETED' },
  ACH_SUBMITTED: { from: ['PENDING', 'FAILED'], to: 'ACHSENT' },
  DECLINED: { from: ['PENDING', 'FAILED'], to: 'FAILED' },
  ACH_SETTLED: { from: ['ACHSENT'], to: 'COMPLETED' },
  ACH_RETURNED: { from: ['ACHSENT', 'COMPLETED'], to: 'FAILED' },
  CHARGED_BACK: { from: ['ACHSENT', 'COMPLETED'], to: 'FAILED' },
  DISPUTE_WON: { from: ['FAILED'], to: 'COMPLETED' },
  REFUNDED: { from: ['COMPLETED'], to: 'REFUNDED' },
  WAIVED: { from: ['PENDING', 'FAILED', 'PAUSED'], to: 'WAIVED' },
  CANCEL_REQUESTED: { from: ['PENDING', 'PAUSED', 'INACTIVE'], to: 'same' },
  CANCEL_COMPLETED: { from: ['PENDING', 'FAILED', 'PAUSED'], to: 'CANCELLED' },
  ACCOUNT_CLOSED: { from: ['PENDING', 'FAILED', 'PAUSED', 'INACTIVE'], to: 'CANCELLED' },
  PAUSED: { from: ['PENDING'], to: 'PAUSED' },
  UNPAUSED: { from: ['PAUSED'], to: 'PENDING' },
  PAUSE_SKIPPED: { from: ['PAUSED'], to: 'SKIPPED' },
  USER_NOT_ACTIVE: { from: ['PENDING', 'FAILED', 'PAUSED'], to: 'INACTIVE' },
  REACTIVATED: { from: ['INACTIVE'], to: 'PENDING' },
  REACTIVATED_PAUSED: { from: ['INACTIVE'], to: 'PAUSED' },
  REACTIVATED_FAILED: { from: ['INACTIVE'], to: 'FAILED' },
  DUE_DATE_CHANGED: { from: ['PENDING'], to: 'same' },
  BILLING_RETRY_REQUESTED: { from: ['PENDING', 'FAILED'], to: 'same' },
  BILLING_FAILURE_RECORDED: { from: ['PENDING', 'FAILED'], to: 'same' },
  DUNNING_EXHAUSTED: { from: ['FAILED'], to: 'same' },
  INSTRUMENT_HELD: { from: ['PENDING', 'FAILED'], to: 'same' },
  HOLD_RELEASED: { from: ['PENDING', 'FAILED'], to: 'same' },
  CEILING_REACHED: { from: ['PENDING', 'FAILED'], to: 'same' },
  PAYMENT_REFUSED: { from: ['PENDING', 'FAILED'], to: 'same' },
  // Also on a written-off period (WAIVED, CANCELLED, SKIPPED) that receives a payment it never recorded (unowed_payment).
  EXCEPTION_RAISED: { from: ['PENDING', 'FAILED', 'ACHSENT', 'COMPLETED', 'WAIVED', 'CANCELLED', 'SKIPPED'], to: 'same' },
  // An operator's resolution of an exception (DESIGN 12, exception-resolution.ts).
  EXCEPTION_ACCEPTED: { from: ['PENDING', 'FAILED', 'ACHSENT'], to: 'COMPLETED' },
  EXCEPTION_WAIVED: { from: ['PENDING', 'FAILED', 'ACHSENT'], to: 'WAIVED' },
  EXCEPTION_REFUNDED: { from: ['PENDING', 'FAILED', 'ACHSENT'], to: 'FAILED' },
});

/** Events on a loan payment (DESIGN 2.7). */
export type LoanPaymentEvent =
  | 'ACH_SUBMITTED'
  | 'SUBMISSION_RECORDED' // by the bank's outcome, for an attempt whose answer was lost (ach-outcomes.ts)
  | 'COLLECTED' // pinless settles at once
  | 'SKIPPED'
  | 'ACH_SETTLED'
  | 'RETRY_SCHEDULED' // a decline or returnable failure with retries left
  | 'ACH_RETURNED' // returned and not retryable, or returned after it settled
  | 'RETRIES_EXHAUSTED'
  | 'CHARGED_BACK';

export const loanPaymentTransitions = new TransitionTable<LoanPaymentStatus, LoanPaymentEvent>('loc_status', {
  ACH_SUBMITTED: { from: ['PENDING', 'RETRY'], to: 'ACHSENT' },
  SUBMISSION_RECORDED: { from: ['PENDING', 'FAILED'], to: 'ACHSENT' },
  COLLECTED: { from: ['PENDING', 'RETRY'], to: 'COMPLETED' },
  SKIPPED: { from: ['PENDING', 'RETRY'], to: 'SKIPPED' },
  ACH_SETTLED: { from: ['ACHSENT'], to: 'COMPLETED' },
  RETRY_SCHEDULED: { from: ['PENDING', 'ACHSENT', 'RETRY'], to: 'RETRY' },
  ACH_RETURNED: { from: ['ACHSENT', 'COMPLETED'], to: 'RETURNED' },
  RETRIES_EXHAUSTED: { from: ['RETRY', 'PENDING'], to: 'FAILED' },
  CHARGED_BACK: { from: ['ACHSENT', 'COMPLETED'], to: 'CHARGED_BACK' },
});
