import { randomUUID } from 'node:crypto';
import * as z from '../../domain/zod.js';
import { lazySchema } from '../../domain/lazy-schema.js';
import { idSchema } from '../../domain/ids.js';
import { referenceRecordKey } from '../../domain/money-movements.js';
import type { ProcessorReport, ProcessorReportPage } from '../../domain/ports/processor-report.js';
import type { PaymentMethod } from '../../domain/records.js';
import type { ProcessorMovement, ReconciliationCode } from '../../domain/reconciliation/match.js';
import { formatInstant, toDate } from '../../domain/time.js';
import type { PaymentSimulator, SimulatedCharge } from './simulator.js';

export const PROCESSOR_FAULT_KINDS = ['drop', 'duplicate', 'amount_skew', 'late_return', 'phantom'] as const;
export type ProcessorFaultKind = (typeof PROCESSOR_FAULT_KINDS)[number];

/** `POST /local/processor/faults`: how a day's report differs from what we were told (DESIGN 9, 14). */
export const processorFaultSchema = lazySchema(() => z.object({
  kind: z.enum(PROCESSOR_FAULT_KINDS),
  date: z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}$/, 'YYYY-MM-DD')),
  user_id: z.optional(idSchema),
  count: z.optional(z.int().check(z.minimum(1), z.maximum(100))),
}));
export type ProcessorFault = z.infer<typeof processorFaultSchema>;

/** Each fault's exception, and the cents it moves by (the skew of `amount_skew`). */
export const FAULT_EXCEPTIONS: Readonly<Record<ProcessorFaultKind, ReconciliationCode>> = {
  drop: 'missing_at_processor',
  duplicate: 'duplicate_charge',
  amount_skew: 'amount_mismatch',
  late_return: 'status_mismatch',
  phantom: 'missing_in_records',
};
export const AMOUNT_SKEW_CENTS = 37;

export interface InjectedFault {
  readonly kind: ProcessorFaultKind;
  readonly rail: PaymentMethod;
  readonly user_id: string;
  readonly transaction_id: string;
  readonly expected_code: ReconciliationCode;
  /** The signed amount the exception should carry. */
  readonly amount_cents: number;
}

export class FaultTargetsExhaustedError extends Error {
  override readonly name = 'FaultTargetsExhaustedError';
  readonly code = 'no_fault_target';
}

type Reported = ProcessorMovement & { readonly rail: PaymentMethod };
const PAGE = 100;

/**
 * The simulator as a processor that reports (DESIGN 9): every debit it accepted, the ACH outcomes
 * the bank has acted on, the refunds and chargebacks it was told of, changed by injected faults.
 */
export class SimulatedProcessorReport implements ProcessorReport {
  private readonly outcomes: Reported[] = [];
  private readonly added: Reported[] = [];
  private readonly dropped = new Set<string>();
  private readonly skewed = new Map<string, number>();
  private readonly targeted = new Set<string>();

  constructor(private readonly simulator: PaymentSimulator) {}

  /** A refund, chargeback or other outcome the processor made (its webhook may or may not reach us). */
  reportOutcome(rail: PaymentMethod, movement: ProcessorMovement): void {
    this.outcomes.push({ ...movement, rail });
  }

  /** Everything reported on one rail, faults applied. */
  movements(rail: PaymentMethod): Reported[] {
    const debits = this.simulator.charges().filter((c) => c.rail === rail && !this.dropped.has(c.confirmation_id)).map((c) => this.debitOf(c));
    return [...debits, ...this.achOutcomes(rail), ...this.outcomes.filter((m) => m.rail === rail), ...this.added.filter((m) => m.rail === rail)];
  }

  async page(rail: PaymentMethod, from: string, to: string, cursor: string | null): Promise<ProcessorReportPage> {
    const lo = toDate(from).getTime();
    const hi = toDate(to).getTime();
    const inWindow = this.movements(rail).filter((m) => {
      const t = toDate(m.occurred_at).getTime();
      return t >= lo && t < hi;
    });
    const offset = cursor === null ? 0 : Number(cursor);
    const next = offset + PAGE < inWindow.length ? String(offset + PAGE) : null;
    return { items: inWindow.slice(offset, offset + PAGE), next };
  }

  /** Applies `fault` to `count` debits of its day (of its user, when named), each a debit no other fault touched. */
  inject(fault: ProcessorFault): InjectedFault[] {
    const count = fault.count ?? 1;
    if (fault.kind === 'phantom') return Array.from({ length: count }, () => this.phantom(fault));
    const candidates = this.simulator
      .charges()
      .filter((c) => formatInstant(new Date(c.submitted_at)).slice(0, 10) === fault.date && !this.targeted.has(c.confirmation_id))
      .filter((c) => fault.user_id === undefined || c.user_id === fault.user_id)
      .filter((c) => fault.kind !== 'late_return' || (c.ach !== undefined && c.ach.result === 'settled'));
    if (candidates.length < count) throw new FaultTargetsExhaustedError(`${fault.kind}: ${candidates.length} debits of ${fault.date} can take it, ${count} asked`);
    return candidates.slice(0, count).map((charge) => this.applyTo(fault.kind, charge));
  }

  private applyTo(kind: ProcessorFaultKind, charge: SimulatedCharge): InjectedFault {
    this.targeted.add(charge.confirmation_id);
    const debit = this.debitOf(charge);
    const base = { kind, rail: charge.rail, user_id: charge.user_id, expected_code: FAULT_EXCEPTIONS[kind] };
    const shortly = formatInstant(new Date(charge.submitted_at + 1));
    switch (kind) {
      case 'drop':
        this.dropped.add(charge.confirmation_id);
        return { ...base, transaction_id: charge.confirmation_id, amount_cents: -charge.amount_cents };
      case 'amount_skew':
        this.skewed.set(charge.confirmation_id, AMOUNT_SKEW_CENTS);
        return { ...base, transaction_id: charge.confirmation_id, amount_cents: AMOUNT_SKEW_CENTS };
      case 'duplicate': {
        const id = `sim_dup_${randomUUID()}`;
        this.added.push({ ...debit, rail: charge.rail, transaction_id: id, occurred_at: shortly });
        return { ...base, transaction_id: id, amount_cents: charge.amount_cents };
      }
      default: {
        const id = `sim_ret_${randomUUID()}`;
        this.added.push({ rail: charge.rail, kind: 'return', transaction_id: id, original_transaction_id: charge.confirmation_id, amount_cents: charge.amount_cents, occurred_at: shortly, ...this.owner(charge) });
        return { ...base, transaction_id: id, amount_cents: -charge.amount_cents };
      }
    }
  }

  private phantom(fault: ProcessorFault): InjectedFault {
    const own = this.simulator.charges().find((c) => c.user_id === fault.user_id);
    const rail = own?.rail ?? 'pinless';
    const id = `sim_phantom_${randomUUID()}`;
    const userId = fault.user_id ?? 'phantom-payer';
    const cents = 1234;
    this.added.push({ rail, kind: 'debit', transaction_id: id, amount_cents: cents, occurred_at: `${fault.date}T12:00:00.000000000Z`, record_key: `sub#${randomUUID()}`, user_id: userId });
    return { kind: 'phantom', rail, user_id: userId, transaction_id: id, expected_code: 'missing_in_records', amount_cents: cents };
  }

  private debitOf(charge: SimulatedCharge): Reported {
    return {
      rail: charge.rail,
      kind: 'debit',
      transaction_id: charge.confirmation_id,
      amount_cents: charge.amount_cents + (this.skewed.get(charge.confirmation_id) ?? 0),
      occurred_at: formatInstant(new Date(charge.submitted_at)),
      ...this.owner(charge),
    };
  }

  private owner(charge: SimulatedCharge): { record_key: string; user_id: string } {
    return { record_key: referenceRecordKey(charge.reference), user_id: charge.user_id };
  }

  /** Settlements and returns the bank has acted on (handed to the webhook pump), at their due instant. */
  private achOutcomes(rail: PaymentMethod): Reported[] {
    return this.simulator
      .charges()
      .filter((c) => c.rail === rail && c.ach !== undefined && this.simulator.outcomeDelivered(c.confirmation_id))
      .map((c) => {
        const settled = c.ach!.result === 'settled';
        return {
          rail,
          kind: settled ? ('settlement' as const) : ('return' as const),
          transaction_id: `${settled ? 'stl' : 'ret'}_${c.confirmation_id}`,
          original_transaction_id: c.confirmation_id,
          amount_cents: c.amount_cents,
          occurred_at: formatInstant(new Date(c.ach!.due_at)),
          ...this.owner(c),
        };
      });
  }
}
