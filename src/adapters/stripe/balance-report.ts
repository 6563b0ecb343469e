import type Stripe from 'stripe';
import type { ProcessorReport, ProcessorReportPage } from '../../domain/ports/processor-report.js';
import type { PaymentMethod } from '../../domain/records.js';
import type { ProcessorMovement } from '../../domain/reconciliation/match.js';
import { formatInstant, toDate } from '../../domain/time.js';
import { mapStripeError } from './processor.js';

type Source = { readonly id?: string; readonly object?: string; readonly payment_intent?: unknown; readonly metadata?: Record<string, string> | null; readonly charge?: unknown };

const idOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : typeof value === 'object' && value !== null && 'id' in value ? String((value as { id: unknown }).id) : undefined);

/**
 * One balance transaction as a movement: a charge is the debit of its PaymentIntent, a refund
 * and a dispute adjustment (withdrawal −, reinstatement +) belong to it. Other types move no member's money.
 */
export function balanceTransactionMovement(bt: Stripe.BalanceTransaction): ProcessorMovement | undefined {
  const source = (typeof bt.source === 'object' && bt.source !== null ? bt.source : { id: bt.source ?? undefined }) as Source;
  const intent = idOf(source.payment_intent);
  const subscriptionId = source.metadata?.subscription_id;
  const common = {
    amount_cents: Math.abs(bt.amount),
    occurred_at: formatInstant(new Date(bt.created * 1000)),
    ...(subscriptionId ? { record_key: `sub#${subscriptionId}` } : {}),
    ...(source.metadata?.user_id ? { user_id: source.metadata.user_id } : {}),
  };
  switch (bt.type) {
    case 'charge':
    case 'payment':
      return { ...common, kind: 'debit', transaction_id: intent ?? source.id ?? bt.id };
    case 'refund':
    case 'payment_refund':
      return { ...common, kind: 'refund', transaction_id: source.id ?? bt.id, original_transaction_id: intent ?? idOf(source.charge) };
    case 'adjustment':
      if (source.object !== 'dispute') return undefined;
      return { ...common, kind: bt.amount < 0 ? 'chargeback' : 'dispute_reinstated', transaction_id: bt.id, original_transaction_id: intent ?? idOf(source.charge) };
    default:
      return undefined;
  }
}

/** Stripe's balance transactions of a window, source expanded, 100 a page; never the Search API. */
export class StripeBalanceReport implements ProcessorReport {
  constructor(private readonly stripe: Stripe) {}

  async page(rail: PaymentMethod, from: string, to: string, cursor: string | null): Promise<ProcessorReportPage> {
    if (rail !== 'card') return { items: [], next: null };
    let list: Stripe.ApiList<Stripe.BalanceTransaction>;
    try {
      list = await this.stripe.balanceTransactions.list({
        created: { gte: Math.floor(toDate(from).getTime() / 1000), lt: Math.floor(toDate(to).getTime() / 1000) },
        limit: 100,
        expand: ['data.source'],
        ...(cursor !== null ? { starting_after: cursor } : {}),
      });
    } catch (error) {
      throw mapStripeError(error, this.stripe.errors);
    }
    const items = list.data.flatMap((bt) => balanceTransactionMovement(bt) ?? []);
    return { items, next: list.has_more && list.data.length > 0 ? list.data[list.data.length - 1]!.id : null };
  }
}
