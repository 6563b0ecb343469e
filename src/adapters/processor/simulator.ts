import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import type { CardPaymentDirectory, CardPaymentReference } from '../../domain/card-outcomes.js';
import { ProcessorError } from '../../domain/errors.js';
import { accountSnapshotSchema } from '../../domain/records.js';
import type {
  AccountDirectory,
  AccountSnapshot,
  Clock,
  PaymentProcessor,
  PaymentReference,
  PaymentRequest,
  PaymentResult,
} from '../../domain/ports.js';

/**
 * The local payment processor: per-user and default outcomes, charges recorded by idempotency key
 * (a repeated key returns the first result and is never a new charge), and ACH outcomes that the
 * local runtime delivers to the ach-handler as signed webhooks once their settle delay has passed.
 */

export const simulatedOutcomeSchema = z.union([
  z.enum(['approve', 'decline', 'error']),
  z.string().regex(/^ach_return:R\d{2}$/, 'ach_return:R<two digits>'),
]);
export type SimulatedOutcome = z.infer<typeof simulatedOutcomeSchema>;

/** An account as the simulator serves it; status defaults to active. */
export const simulatedAccountSchema = accountSnapshotSchema.extend({
  status: accountSnapshotSchema.shape.status.default('active'),
});

export const processorSettingsSchema = z.strictObject({
  default: simulatedOutcomeSchema.default('approve'),
  users: z.record(z.string().min(1), simulatedOutcomeSchema).default({}),
  /** Simulated milliseconds between an ACH submission and its settlement or return (default 0). */
  ach_settle_delay_ms: z.number().int().nonnegative().optional(),
  /** Account snapshots the gate sees, per user; absent users are active with no balance observed. */
  accounts: z.record(z.string().min(1), simulatedAccountSchema).optional(),
});
export type ProcessorSettings = z.input<typeof processorSettingsSchema>;

export interface SimulatedCharge {
  readonly idempotency_key: string;
  readonly user_id: string;
  readonly amount_cents: number;
  readonly rail: PaymentRequest['rail'];
  readonly confirmation_id: string;
  readonly reference: PaymentReference;
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

export class PaymentSimulator implements PaymentProcessor, AccountDirectory, CardPaymentDirectory {
  private settings = processorSettingsSchema.parse({});
  private readonly results = new Map<string, PaymentResult>();
  private readonly chargeList: SimulatedCharge[] = [];
  private readonly delivered = new Set<string>();
  private achDelayMs = 0;

  constructor(private readonly clock: Clock) {}

  configure(input: ProcessorSettings): void {
    this.settings = processorSettingsSchema.parse(input);
    this.achDelayMs = this.settings.ach_settle_delay_ms ?? 0;
  }

  current(): z.infer<typeof processorSettingsSchema> {
    return this.settings;
  }

  outcomeFor(userId: string): SimulatedOutcome {
    return this.settings.users[userId] ?? this.settings.default;
  }

  async submit(request: PaymentRequest): Promise<PaymentResult> {
    const seen = this.results.get(request.idempotency_key);
    if (seen) return seen;
    const outcome = this.outcomeFor(request.user_id);
    if (outcome === 'error') throw new ProcessorError('processor_unavailable', 'The payment processor is unavailable.');
    if (outcome === 'decline') {
      const declined: PaymentResult = { outcome: 'declined', decline_code: 'insufficient_funds', message: DECLINE_MESSAGE };
      this.results.set(request.idempotency_key, declined);
      return declined;
    }
    const confirmation_id = `sim_${randomUUID()}`;
    const now = this.clock.now().getTime();
    const isAch = request.rail === 'ach';
    const result: PaymentResult = isAch ? { outcome: 'submitted', confirmation_id } : { outcome: 'approved', confirmation_id };
    this.results.set(request.idempotency_key, result);
    this.chargeList.push({
      idempotency_key: request.idempotency_key,
      user_id: request.user_id,
      amount_cents: request.amount_cents,
      rail: request.rail,
      confirmation_id,
      reference: request.reference,
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
    });
    return result;
  }

  async getAccount(userId: string): Promise<AccountSnapshot> {
    const snapshot = this.settings.accounts?.[userId];
    return snapshot ? (snapshot as AccountSnapshot) : { status: 'active' };
  }

  /** The subscription a simulated card payment was for, by its confirmation id (the PaymentIntent id). */
  async findReference(paymentIntentId: string): Promise<CardPaymentReference | undefined> {
    const charge = this.chargeList.find((c) => c.confirmation_id === paymentIntentId);
    if (!charge || charge.reference.kind !== 'subscription') return undefined;
    const { user_id, billing_date, subscription_id } = charge.reference;
    return { user_id, billing_date, subscription_id };
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
      due.push(
        charge.ach.result === 'settled'
          ? { charge, type: 'settled' }
          : { charge, type: 'returned', return_code: charge.ach.result.return_code },
      );
    }
    return due;
  }

  /** Puts an outcome back (delivery failed) so the next pump retries it. */
  redeliver(confirmationId: string): void {
    this.delivered.delete(confirmationId);
  }
}
