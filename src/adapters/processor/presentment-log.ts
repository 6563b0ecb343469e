import type { PaymentReference, PaymentRequest, PaymentResult } from '../../domain/ports/processor.js';

/**
 * The processor's own log of presentments (DESIGN 10): every request that reached it, in order, with
 * the instrument it debited as the processor knows it, when (simulated clock), what it answered and,
 * for ACH, what the bank later said. A repeated idempotency key is logged too, marked `resend`: it
 * charges nothing, but it is a request the system sent. The reference model judges the rails from
 * this log alone, never from what the system wrote about itself.
 */

export type PresentmentAnswer =
  | { readonly kind: 'approved' | 'submitted'; readonly confirmation_id: string }
  | { readonly kind: 'declined'; readonly decline_code: string; readonly advice_code?: string; readonly network_decline_code?: string; readonly card_network?: string }
  | { readonly kind: 'error' };

export interface BankOutcome {
  readonly type: 'settled' | 'returned';
  readonly return_code?: string;
  /** When the bank handed the outcome out (simulated epoch ms). */
  readonly at: number;
}

export interface LoggedPresentment {
  /** Position in the log (0-based): the processor's order. */
  readonly seq: number;
  readonly at: number;
  readonly idempotency_key: string;
  readonly user_id: string;
  readonly rail: PaymentRequest['rail'];
  readonly amount_cents: number;
  readonly reference: PaymentReference;
  /** The instrument the processor debited: the request's, or for a card it resolved, the card it charged. */
  readonly instrument_id?: string;
  readonly brand?: string;
  /** The request was flagged a re-presentment (NACHA `RETRY PYMT`). */
  readonly reinitiated: boolean;
  readonly entry_description?: string;
  /** Who started it, when the request says so (Visa counts merchant- and customer-initiated apart). */
  readonly initiated?: string;
  /** The key was answered before: the same answer again, nothing charged. */
  readonly resend: boolean;
  readonly answer: PresentmentAnswer;
  /** ACH: the bank's settlement or return, once handed out. */
  bank?: BankOutcome;
}

export function answerOf(result: PaymentResult): PresentmentAnswer {
  if (result.outcome !== 'declined') return { kind: result.outcome, confirmation_id: result.confirmation_id };
  return {
    kind: 'declined',
    decline_code: result.decline_code,
    ...(result.advice_code !== undefined ? { advice_code: result.advice_code } : {}),
    ...(result.network_decline_code !== undefined ? { network_decline_code: result.network_decline_code } : {}),
    ...(result.card_network !== undefined ? { card_network: result.card_network } : {}),
  };
}

export class PresentmentLog {
  private readonly entries: LoggedPresentment[] = [];
  private readonly byConfirmation = new Map<string, LoggedPresentment>();

  add(entry: Omit<LoggedPresentment, 'seq'>): LoggedPresentment {
    const logged: LoggedPresentment = { ...entry, seq: this.entries.length };
    this.entries.push(logged);
    if ((logged.answer.kind === 'approved' || logged.answer.kind === 'submitted') && !logged.resend) this.byConfirmation.set(logged.answer.confirmation_id, logged);
    return logged;
  }

  /** The bank's outcome of an ACH entry, by the confirmation the processor gave it. */
  bankOutcome(confirmationId: string, outcome: BankOutcome): void {
    const entry = this.byConfirmation.get(confirmationId);
    if (entry && !entry.bank) entry.bank = outcome;
  }

  list(): readonly LoggedPresentment[] {
    return this.entries;
  }
}

/** What the processor names about a request beyond the request itself (its instrument, brand, who started it). */
export function requestFacts(request: PaymentRequest): { reinitiated: boolean; entry_description?: string; initiated?: string } {
  const initiated = (request as { readonly initiated?: unknown }).initiated;
  return {
    reinitiated: request.reinitiated === true,
    ...(request.entry_description !== undefined ? { entry_description: request.entry_description } : {}),
    ...(typeof initiated === 'string' ? { initiated } : {}),
  };
}
