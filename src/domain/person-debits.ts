import { DomainError } from './errors.js';
import type { Clock } from './ports/clock.js';
import type { PersonDebitCounter } from './ports/person-debits.js';

/** A member's daily cap on debits people start (manual pay, retry-billing, loan payments), DESIGN 15. */
export interface PersonDebitCap {
  readonly counter: PersonDebitCounter;
  readonly limitCents: number;
}

/** The cap would be passed: 409, nothing presented or written. */
export class DailyDebitLimitError extends DomainError {
  override readonly name = 'DailyDebitLimitError';
  readonly code = 'daily_debit_limit';
  constructor(readonly limitCents: number) {
    super(`this debit would take the member past the daily limit of ${limitCents} cents on payments people start; try again tomorrow`);
  }
}

/** An attempt's outcome that moved money (or handed a debit to the bank): what the cap counts. */
export function movedMoney(outcome: { readonly kind: string }): boolean {
  return outcome.kind === 'collected' || outcome.kind === 'submitted';
}

/**
 * Reserves `cents` of the member's UTC day before `run` presents, and gives it back when `moved`
 * says the result moved no money. A throw keeps the reservation: an answer we never saw may have
 * debited, so the cap errs on the member's side. Without a cap, `run` alone.
 */
export async function withinDailyDebitLimit<T>(
  cap: PersonDebitCap | undefined,
  clock: Clock,
  debit: { readonly userId: string; readonly cents: number },
  run: () => Promise<T>,
  moved: (result: T) => boolean,
): Promise<T> {
  if (!cap) return run();
  const day = clock.now().toISOString().slice(0, 10);
  if (!(await cap.counter.reserve(debit.userId, day, debit.cents, cap.limitCents))) throw new DailyDebitLimitError(cap.limitCents);
  const result = await run();
  if (!moved(result)) await cap.counter.release(debit.userId, day, debit.cents);
  return result;
}
