import type { PaymentMethod } from './records.js';

/** The payment processors a budget is kept for (DESIGN 13): Stripe runs cards, the payments service ACH and pinless. */
export const PROCESSOR_IDS = ['stripe', 'payments'] as const;
export type ProcessorId = (typeof PROCESSOR_IDS)[number];

const PROCESSOR_OF_RAIL: Readonly<Record<PaymentMethod, ProcessorId>> = { card: 'stripe', ach: 'payments', pinless: 'payments' };

export function processorOfRail(rail: PaymentMethod): ProcessorId {
  return PROCESSOR_OF_RAIL[rail];
}

/** Who asks: scheduled callers leave the person-started share of every second to the paths people start. */
export type BudgetClass = 'scheduled' | 'person';

export interface ProcessorBudgetSettings {
  /** Requests per second each processor accepts from us. */
  readonly perSecond: Readonly<Record<ProcessorId, number>>;
  /** The share of each second reserved for paths people start (0 ≤ share < 1). */
  readonly personShare: number;
}

export const DEFAULT_BUDGET_PER_SECOND = 20;
export const DEFAULT_PERSON_SHARE = 0.1;

/** The tokens a caller of `klass` may see taken in one second: the whole budget for a person, (1 − share) × budget for the schedule. */
export function capOf(settings: ProcessorBudgetSettings, processor: ProcessorId, klass: BudgetClass): number {
  const budget = settings.perSecond[processor];
  return klass === 'person' ? budget : scheduledRate(settings, processor);
}

/** E = (1 − share) × budget, whole requests, at least one. */
export function scheduledRate(settings: ProcessorBudgetSettings, processor: ProcessorId): number {
  return Math.max(1, Math.floor((1 - settings.personShare) * settings.perSecond[processor] + 1e-9));
}
