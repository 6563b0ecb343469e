import { createHash, randomUUID } from 'node:crypto';
import * as z from '../../domain/zod.js';
import type { CardPaymentDirectory, CardPaymentReference } from '../../domain/card-outcomes.js';
import { ProcessorError, ProcessorOutageError } from '../../domain/errors.js';
import { accountSnapshotSchema } from '../../domain/records.js';
import type { AccountDirectory, AccountSnapshot } from '../../domain/ports/account-directory.js';
import type { Clock } from '../../domain/ports/clock.js';
import type { PaymentProcessor, PaymentReference, PaymentRequest, PaymentResult, ProcessorRefund, RefundQuery } from '../../domain/ports/processor.js';
import { processorOfRail } from '../../domain/processor-budget.js';
import { latencySchema, ProcessorRateLimit, rateLimitSchema, type SimulatorStats } from './rate-limit.js';
import type { SimulatorJournal } from './journal.js';
import { answerOf, PresentmentLog, requestFacts, type LoggedPresentment } from './presentment-log.js';
import type { StripeCard } from '../../domain/instruments/instrument.js';
import type { CustomerCard } from '../../domain/card-outcomes.js';

/**
 * The local payment processor: per-user and default outcomes, charges recorded by idempotency key
 * (a repeated key returns the first result and is never a new charge), and ACH outcomes that the
 * local runtime delivers to the ach-handler as signed webhooks once their settle delay has passed.
 */

export const simulatedOutcomeSchema = z.union([
  z.enum(['approve', 'decline', 'error']),
  z.string().check(z.regex(/^ach_return:R\d{2}$/, 'ach_return:R<two digits>')),
  // A Stripe decline code (DESIGN 9): `decline:lost_card`, `decline:insufficient_funds`, ...
  z.string().check(z.regex(/^decline:[a-z][a-z_]{0,63}$/, 'decline:<stripe decline code>')),
]);
export type SimulatedOutcome = z.infer<typeof simulatedOutcomeSchema>;

/** An account as the simulator serves it; status defaults to active. */
export const simulatedAccountSchema = z.extend(accountSnapshotSchema, {
  status: z._default(accountSnapshotSchema.shape.status, 'active'),
});

export const processorSettingsSchema = z.strictObject({
  default: z._default(simulatedOutcomeSchema, 'approve'),
  users: z._default(z.record(z.string().check(z.minLength(1)), simulatedOutcomeSchema), {}),
  /** Simulated milliseconds between an ACH submission and its settlement or return (default 0). */
  ach_settle_delay_ms: z.optional(z.int().check(z.nonnegative())),
  /** Account snapshots the gate sees, per user; absent users are active with no balance observed. */
  accounts: z.optional(z.record(z.string().check(z.minLength(1)), simulatedAccountSchema)),
  /** Requests per wall-clock second each processor accepts; above it the request is throttled (DESIGN 9, 13). */
  rate_limit_per_second: z.optional(rateLimitSchema),
  /** Each presentment waits a random time of this shape (wall time). */
  latency_ms: z.optional(latencySchema),
  /** `revoked`: every call fails as a revoked key or a refused client does (DESIGN 15). */
  auth: z.optional(z.enum(['ok', 'revoked'])),
  /** Each user's default card in the simulated Stripe (absent: one derived from the user id, a Visa). */
  cards: z.optional(z.record(z.string().check(z.minLength(1)), z.strictObject({ fingerprint: z.string().check(z.minLength(1)), brand: z._default(z.string(), 'visa') }))),
});
export type ProcessorSettings = z.input<typeof processorSettingsSchema>;

/** A refund an operator makes at the processor (`POST /local/processor/refunds`), of any payment it names. */
export const simulatedRefundSchema = z.strictObject({
  transaction_id: z.string().check(z.minLength(1), z.maxLength(256)),
  amount_cents: z.int().check(z.positive()),
});
export type SimulatedRefundRequest = z.infer<typeof simulatedRefundSchema>;

export interface SimulatedCharge {
  readonly idempotency_key: string;
  readonly user_id: string;
  readonly amount_cents: number;
  readonly rail: PaymentRequest['rail'];
  readonly confirmation_id: string;
  readonly reference: PaymentReference;
  /** The instrument the request named (DESIGN 3.2): the processor's own log of what it presented. */
  readonly instrument_id?: string;
  readonly outcome: 'approved' | 'submitted';
  readonly submitted_at: number;
  /** A re-presented R01/R09 entry, as the request flagged it (NACHA `RETRY PYMT`). */
  readonly reinitiated?: true;
  readonly entry_description?: string;
  /** For ACH: what the bank will say, and when (simulated epoch ms). */
  readonly ach?: { readonly result: 'settled' | { readonly return_code: string }; readonly due_at: number };
}

export interface PendingAchOutcome {
  readonly charge: SimulatedCharge;
  readonly type: 'settled' | 'returned';
  readonly return_code?: string;
}

const DECLINE_MESSAGE = 'The payment was declined by the bank.';

/**
 * What Stripe sends beside a decline code (its `advice_code`, and for a Visa card the network's
 * response code), per https://docs.stripe.com/declines/codes and Visa's response codes: the
 * simulator's card is a Visa. A code not listed here is sent alone, as Stripe does for rare ones.
 */
const STRIPE_DECLINE_EXTRAS: Readonly<Record<string, { readonly advice_code?: string; readonly network_decline_code?: string }>> = {
  lost_card: { advice_code: 'do_not_try_again', network_decline_code: '41' },
  stolen_card: { advice_code: 'do_not_try_again', network_decline_code: '43' },
  pickup_card: { advice_code: 'do_not_try_again', network_decline_code: '04' },
  fraudulent: { advice_code: 'do_not_try_again', network_decline_code: '59' },
  restricted_card: { advice_code: 'do_not_try_again', network_decline_code: '62' },
  invalid_account: { advice_code: 'do_not_try_again', network_decline_code: '14' },
  revocation_of_authorization: { advice_code: 'do_not_try_again', network_decline_code: 'R0' },
  card_not_supported: { advice_code: 'do_not_try_again', network_decline_code: '57' },
  expired_card: { advice_code: 'confirm_card_data', network_decline_code: '54' },
  incorrect_number: { advice_code: 'confirm_card_data', network_decline_code: '14' },
  incorrect_cvc: { advice_code: 'confirm_card_data', network_decline_code: 'N7' },
  invalid_expiry_year: { advice_code: 'confirm_card_data', network_decline_code: '54' },
  insufficient_funds: { advice_code: 'try_again_later', network_decline_code: '51' },
  generic_decline: { advice_code: 'try_again_later', network_decline_code: '05' },
  do_not_honor: { advice_code: 'try_again_later', network_decline_code: '05' },
  try_again_later: { advice_code: 'try_again_later', network_decline_code: '19' },
  processing_error: { advice_code: 'try_again_later', network_decline_code: '96' },
  issuer_not_available: { advice_code: 'try_again_later', network_decline_code: '91' },
  authentication_required: { network_decline_code: '1A' },
};

/** The decline the simulator answers for `decline` (= `generic_decline`) or `decline:<code>`. */
export function simulatedDecline(outcome: 'decline' | `decline:${string}`): PaymentResult {
  const code = outcome === 'decline' ? 'generic_decline' : outcome.slice('decline:'.length);
  return { outcome: 'declined', decline_code: code, ...(Object.hasOwn(STRIPE_DECLINE_EXTRAS, code) ? STRIPE_DECLINE_EXTRAS[code] : {}), card_network: 'visa', message: DECLINE_MESSAGE };
}

/** Every simulated user has an ACH account under one authorization and a pinless card, unless configured otherwise. */
export function defaultInstruments(userId: string): NonNullable<AccountSnapshot['instruments']> {
  const tag = createHash('sha256').update(userId).digest('hex').slice(0, 12);
  return {
    ach: { account_id: `acct_${tag}`, authorization_id: `auth_${tag}_1`, authorized_at: '2026-01-01T00:00:00.000Z' },
    pinless: { fingerprint: `fp_${tag}`, brand: 'visa' },
  };
}

/** A user's simulated Stripe customer id, and back (the id carries the user id's hash only). */
export function simulatedCustomerId(userId: string): string {
  return `cus_sim_${createHash('sha256').update(userId).digest('hex').slice(0, 14)}`;
}

export class PaymentSimulator implements PaymentProcessor, AccountDirectory, CardPaymentDirectory {
  private settings = processorSettingsSchema.parse({});
  private readonly log = new PresentmentLog();
  private readonly customers = new Map<string, string>();
  private readonly results = new Map<string, PaymentResult>();
  private readonly chargeList: SimulatedCharge[] = [];
  private readonly delivered = new Set<string>();
  private readonly refunds = new Map<string, ProcessorRefund>();
  private achDelayMs = 0;
  private readonly limits: ProcessorRateLimit;

  /** With a journal, what it promised before a restart is restored, and every new promise is written before it is answered. */
  constructor(
    private readonly clock: Clock,
    private readonly journal?: SimulatorJournal,
    options: { readonly wallNowMs?: () => number } = {},
  ) {
    this.limits = new ProcessorRateLimit(options.wallNowMs);
    for (const entry of journal?.load() ?? []) {
      if ('charge' in entry) {
        this.chargeList.push(entry.charge);
        const { outcome, confirmation_id, instrument_id } = entry.charge;
        this.results.set(entry.charge.idempotency_key, { outcome, confirmation_id, ...(instrument_id !== undefined ? { instrument_id } : {}) } as PaymentResult);
      } else if ('declined' in entry) this.results.set(entry.declined.idempotency_key, entry.declined.result);
      else if ('refund' in entry) this.refunds.set(entry.refund.refund_id, entry.refund);
      else this.delivered.add(entry.delivered);
    }
  }

  configure(input: ProcessorSettings): void {
    this.settings = processorSettingsSchema.parse(input);
    this.achDelayMs = this.settings.ach_settle_delay_ms ?? 0;
    this.limits.configure(this.settings.rate_limit_per_second, this.settings.latency_ms);
    for (const userId of Object.keys(this.settings.cards ?? {})) this.customers.set(simulatedCustomerId(userId), userId);
  }

  /** Requests, presentments and throttled answers, cumulative since start, and by processor. */
  stats(): SimulatorStats {
    return this.limits.snapshot();
  }

  current(): z.infer<typeof processorSettingsSchema> {
    return this.settings;
  }

  outcomeFor(userId: string): SimulatedOutcome {
    return this.settings.users[userId] ?? this.settings.default;
  }

  async submit(request: PaymentRequest): Promise<PaymentResult> {
    const processor = processorOfRail(request.rail);
    this.limits.admit(processor);
    this.limits.presented(processor);
    const delay = this.limits.delayMs();
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    this.refuseRevoked(request.rail === 'card' ? 'stripe' : 'payments');
    const card = request.rail === 'card' ? this.chargedCard(request) : undefined;
    const seen = this.results.get(request.idempotency_key);
    const logged = (result: PaymentResult | undefined, resend: boolean) => this.logPresentment(request, card, result, resend);
    if (seen) {
      logged(seen, true);
      return seen;
    }
    const outcome = this.outcomeFor(request.user_id);
    if (outcome === 'error') {
      logged(undefined, false);
      throw new ProcessorError('processor_unavailable', 'The payment processor is unavailable.');
    }
    // A card the request did not name is the customer's default, resolved as the Stripe adapter does.
    const resolved = card && !request.card?.fingerprint ? { resolved_card: card } : {};
    if (outcome === 'decline' || outcome.startsWith('decline:')) {
      const declined: PaymentResult = { ...simulatedDecline(outcome as 'decline' | `decline:${string}`), ...resolved };
      this.journal?.append({ declined: { idempotency_key: request.idempotency_key, result: declined } });
      this.results.set(request.idempotency_key, declined);
      logged(declined, false);
      return declined;
    }
    const { charge, result } = this.accept(request, outcome, card);
    this.journal?.append({ charge });
    this.results.set(request.idempotency_key, { ...result, ...resolved } as PaymentResult);
    this.chargeList.push(charge);
    logged(result, false);
    return { ...result, ...resolved } as PaymentResult;
  }

  private accept(request: PaymentRequest, outcome: SimulatedOutcome, card: StripeCard | undefined): { charge: SimulatedCharge; result: PaymentResult } {
    const confirmation_id = `sim_${randomUUID()}`;
    const now = this.clock.now().getTime();
    const isAch = request.rail === 'ach';
    const instrumentId = request.instrument_id ?? (card?.fingerprint !== undefined ? `card:${card.fingerprint}` : undefined);
    const named = instrumentId !== undefined ? { instrument_id: instrumentId } : {};
    const result: PaymentResult = isAch ? { outcome: 'submitted', confirmation_id, ...named } : { outcome: 'approved', confirmation_id, ...named };
    const charge: SimulatedCharge = {
      idempotency_key: request.idempotency_key,
      user_id: request.user_id,
      amount_cents: request.amount_cents,
      rail: request.rail,
      confirmation_id,
      reference: request.reference,
      ...named,
      outcome: result.outcome as 'approved' | 'submitted',
      submitted_at: now,
      ...(request.reinitiated ? { reinitiated: true as const } : {}),
      ...(request.entry_description !== undefined ? { entry_description: request.entry_description } : {}),
      ...(isAch
        ? {
            ach: {
              result: outcome.startsWith('ach_return:') ? { return_code: outcome.slice('ach_return:'.length) } : 'settled',
              due_at: now + this.achDelayMs,
            },
          }
        : {}),
    };
    return { charge, result };
  }

  /** The card Stripe charges: the stored one the request names, else the customer's default. */
  private chargedCard(request: PaymentRequest): StripeCard {
    if (request.card?.fingerprint !== undefined) return request.card;
    return this.defaultCard(request.user_id);
  }

  private defaultCard(userId: string): StripeCard {
    const customer = simulatedCustomerId(userId);
    this.customers.set(customer, userId);
    const configured = this.settings.cards?.[userId];
    const fingerprint = configured?.fingerprint ?? `fpc_${createHash('sha256').update(userId).digest('hex').slice(0, 12)}`;
    return { customer, payment_method: `pm_sim_${fingerprint}`, fingerprint, brand: configured?.brand ?? 'visa' };
  }

  /** The brand of the instrument as the processor knows it: the card's, or the pinless card the directory names. */
  private brandOf(request: PaymentRequest, card: StripeCard | undefined): string | undefined {
    if (card) return card.brand;
    if (request.rail !== 'pinless') return undefined;
    const snapshot = this.settings.accounts?.[request.user_id];
    return { ...defaultInstruments(request.user_id), ...snapshot?.instruments }.pinless?.brand;
  }

  private logPresentment(request: PaymentRequest, card: StripeCard | undefined, result: PaymentResult | undefined, resend: boolean): LoggedPresentment {
    const instrumentId = request.instrument_id ?? (card?.fingerprint !== undefined ? `card:${card.fingerprint}` : undefined);
    const brand = this.brandOf(request, card);
    return this.log.add({
      at: this.clock.now().getTime(),
      idempotency_key: request.idempotency_key,
      user_id: request.user_id,
      rail: request.rail,
      amount_cents: request.amount_cents,
      reference: request.reference,
      ...(instrumentId !== undefined ? { instrument_id: instrumentId } : {}),
      ...(brand !== undefined ? { brand } : {}),
      ...requestFacts(request),
      resend,
      answer: result ? answerOf(result) : { kind: 'error' },
    });
  }

  /** The processor's log of every presentment, oldest first (DESIGN 10: what the reference model judges). */
  presentments(): readonly LoggedPresentment[] {
    return this.log.list();
  }

  async getAccount(userId: string): Promise<AccountSnapshot> {
    this.refuseRevoked('accounts');
    const snapshot = this.settings.accounts?.[userId] ?? { status: 'active' as const };
    return { ...snapshot, instruments: { ...defaultInstruments(userId), ...snapshot.instruments } };
  }

  /** The subscription a simulated card payment was for, by its confirmation id (the PaymentIntent id). */
  async findReference(paymentIntentId: string): Promise<CardPaymentReference | undefined> {
    this.limits.admit('stripe');
    const charge = this.chargeList.find((c) => c.confirmation_id === paymentIntentId);
    if (!charge || charge.reference.kind !== 'subscription') return undefined;
    const { user_id, billing_date, subscription_id } = charge.reference;
    return { user_id, billing_date, subscription_id };
  }

  /** What the adapters answer for Stripe's 401 and the payments service's credential errors. */
  private refuseRevoked(service: 'stripe' | 'payments' | 'accounts'): void {
    if (this.settings.auth === 'revoked') throw new ProcessorOutageError(service, 'processor_auth');
  }

  /** A simulated customer's default card now (a customer it never made is one Stripe does not have). */
  async cardOfCustomer(customerId: string): Promise<CustomerCard | undefined> {
    const userId = this.customers.get(customerId);
    return userId === undefined ? undefined : { user_id: userId, card: this.defaultCard(userId) };
  }

  /** Refunds money at once, as a dashboard refund does; the payment need not be one the simulator took. */
  refund(request: SimulatedRefundRequest): ProcessorRefund {
    const refund: ProcessorRefund = { refund_id: `re_sim_${randomUUID().replace(/-/g, '')}`, status: 'succeeded', ...request };
    this.journal?.append({ refund });
    this.refunds.set(refund.refund_id, refund);
    return refund;
  }

  async findRefund(query: RefundQuery): Promise<ProcessorRefund | undefined> {
    return this.refunds.get(query.refund_id);
  }

  charges(): readonly SimulatedCharge[] {
    return this.chargeList;
  }

  /** ACH outcomes whose settle delay has passed at simulated `nowMs` and were not yet handed out. */
  takeDueAchOutcomes(nowMs: number): PendingAchOutcome[] {
    const due: PendingAchOutcome[] = [];
    for (const charge of this.chargeList) {
      if (!charge.ach || this.delivered.has(charge.confirmation_id) || charge.ach.due_at > nowMs) continue;
      this.delivered.add(charge.confirmation_id);
      const outcome: PendingAchOutcome = charge.ach.result === 'settled' ? { charge, type: 'settled' } : { charge, type: 'returned', return_code: charge.ach.result.return_code };
      this.log.bankOutcome(charge.confirmation_id, { type: outcome.type, ...(outcome.return_code !== undefined ? { return_code: outcome.return_code } : {}), at: nowMs });
      due.push(outcome);
    }
    return due;
  }

  /** Whether the ACH outcome of `confirmationId` was handed out (the bank has acted on it). */
  outcomeDelivered(confirmationId: string): boolean {
    return this.delivered.has(confirmationId);
  }

  /** Puts an outcome back (delivery failed) so the next pump retries it. */
  redeliver(confirmationId: string): void {
    this.delivered.delete(confirmationId);
  }

  /** The bank's receiver accepted the outcome: it is never handed out again, also after a restart. */
  acknowledge(confirmationId: string): void {
    this.journal?.append({ delivered: confirmationId });
  }
}
