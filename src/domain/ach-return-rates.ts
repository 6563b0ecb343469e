import { NACHA_RETURN_RATE_THRESHOLDS_PERCENT, RETURN_RATE_WINDOW_DAYS, returnRateClassesOf, type ReturnRateClass } from './nacha.js';
import type { BillingRecord } from './records.js';
import type { LoanPayment } from './loan-payments.js';

/** ACH return rates (DESIGN 4.1): what one write counts, and the rates of the window's totals. */

/** The alarms fire at this share of each NACHA threshold: time to act before the bank does. */
export const RETURN_RATE_WARNING_SHARE = 0.8;

export const RETURN_RATE_WARNING_PERCENT: Readonly<Record<ReturnRateClass, number>> = {
  unauthorized: round(NACHA_RETURN_RATE_THRESHOLDS_PERCENT.unauthorized * RETURN_RATE_WARNING_SHARE),
  administrative: round(NACHA_RETURN_RATE_THRESHOLDS_PERCENT.administrative * RETURN_RATE_WARNING_SHARE),
  overall: round(NACHA_RETURN_RATE_THRESHOLDS_PERCENT.overall * RETURN_RATE_WARNING_SHARE),
};

export interface AchRateCounts {
  /** Each presentment, re-presentments included. */
  readonly debits: number;
  readonly returns: number;
  readonly unauthorized: number;
  readonly administrative: number;
}

export interface AchRateTally {
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  readonly counts: AchRateCounts;
}

export const NO_ACH_RATE_COUNTS: AchRateCounts = { debits: 0, returns: 0, unauthorized: 0, administrative: 0 };

export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** Today and the 59 days before it. */
export function returnRateWindow(now: Date): { readonly from: string; readonly to: string } {
  const from = new Date(now.getTime() - (RETURN_RATE_WINDOW_DAYS - 1) * 24 * 60 * 60 * 1000);
  return { from: utcDay(from), to: utcDay(now) };
}

export function achDebitTally(now: Date): AchRateTally {
  return { day: utcDay(now), counts: { ...NO_ACH_RATE_COUNTS, debits: 1 } };
}

/** Only for a return that changed the record: replays count nothing. */
export function achReturnTally(returnCode: string, now: Date): AchRateTally {
  const classes = returnRateClassesOf(returnCode);
  return {
    day: utcDay(now),
    counts: { ...NO_ACH_RATE_COUNTS, returns: 1, unauthorized: classes.includes('unauthorized') ? 1 : 0, administrative: classes.includes('administrative') ? 1 : 0 },
  };
}

/** An attempt (its count moves) that left the period ACHSENT. */
export function originatesAchDebit(read: Pick<BillingRecord, 'payment_attempts'>, after: Pick<BillingRecord, 'payment_method' | 'billing_status' | 'payment_attempts'>): boolean {
  return after.payment_method === 'ach' && after.billing_status === 'ACHSENT' && after.payment_attempts > read.payment_attempts;
}

export function originatesLoanAchDebit(
  read: Pick<LoanPayment, 'loc_payment_attempts'>,
  after: Pick<LoanPayment, 'loc_payment_method' | 'loc_status' | 'loc_payment_attempts'>,
): boolean {
  return after.loc_payment_method === 'ach' && after.loc_status === 'ACHSENT' && after.loc_payment_attempts > read.loc_payment_attempts;
}

export function addAchRateCounts(a: AchRateCounts, b: AchRateCounts): AchRateCounts {
  return { debits: a.debits + b.debits, returns: a.returns + b.returns, unauthorized: a.unauthorized + b.unauthorized, administrative: a.administrative + b.administrative };
}

export interface ReturnRate {
  readonly percent: number;
  readonly returns: number;
  readonly debits: number;
}

/** Returns with no debit in the window (origination stopped, returns still arriving) are 100 %. */
export function returnRates(totals: AchRateCounts): Record<ReturnRateClass, ReturnRate> {
  const rate = (returns: number): ReturnRate => ({
    percent: totals.debits > 0 ? round((returns / totals.debits) * 100) : returns > 0 ? 100 : 0,
    returns,
    debits: totals.debits,
  });
  return { unauthorized: rate(totals.unauthorized), administrative: rate(totals.administrative), overall: rate(totals.returns) };
}

/** Six decimals of a percent: enough below any threshold, and no float noise in a gauge. */
function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}
