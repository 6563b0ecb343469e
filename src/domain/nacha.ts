import { holdClassOfReturn } from './instruments/holds.js';

/** NACHA's rules, apart from our decisions about them (ach-outcomes.ts, ach-return-rates.ts). */

export const RETURN_CODE_PATTERN = /^R\d{2}$/;

export type ReturnCodeClass = 'represent' | 'account_error' | 'unauthorized';

/** The holds table's classes (DESIGN 3.2): R01/R09 re-presentable; unauthorized or stopped; every other code stops ACH retries. */
export function classifyReturnCode(code: string): ReturnCodeClass {
  const holdClass = holdClassOfReturn(code);
  if (holdClass === 'ach_represent') return 'represent';
  if (holdClass === 'ach_unauthorized') return 'unauthorized';
  // Unknown or account-level codes: never debit the account again without a person deciding.
  return 'account_error';
}

/** An R01/R09 entry may be re-presented at most twice, within 180 days of the original entry. */
export const MAX_ACH_REPRESENTMENTS = 2;
export const ACH_REPRESENTMENT_WINDOW_MS = 180 * 24 * 60 * 60 * 1000;

export function withinRepresentmentWindow(originalEntryDate: string, now: Date): boolean {
  return now.getTime() - Date.parse(originalEntryDate) <= ACH_REPRESENTMENT_WINDOW_MS;
}

export function pastRepresentmentWindow(originalEntryDate: string, now: Date): boolean {
  return now.getTime() - Date.parse(originalEntryDate) > ACH_REPRESENTMENT_WINDOW_MS;
}

/** ACH Network Risk and Enforcement: return rates over the preceding 60 days, by class. */
export const RETURN_RATE_CLASSES = ['unauthorized', 'administrative', 'overall'] as const;
export type ReturnRateClass = (typeof RETURN_RATE_CLASSES)[number];
export const RETURN_RATE_WINDOW_DAYS = 60;

/** NACHA's unauthorized rate counts R05, R07, R10, R11, R29 and R51, not R08 (a stop payment, held but not counted). */
const UNAUTHORIZED_RATE_CODES: ReadonlySet<string> = new Set(['R05', 'R07', 'R10', 'R11', 'R29', 'R51']);
/** Account closed, no account, invalid account number. */
const ADMINISTRATIVE_RATE_CODES: ReadonlySet<string> = new Set(['R02', 'R03', 'R04']);

/** In percent of the debits originated in the window. */
export const NACHA_RETURN_RATE_THRESHOLDS_PERCENT: Readonly<Record<ReturnRateClass, number>> = {
  unauthorized: 0.5,
  administrative: 3,
  overall: 15,
};

export function returnRateClassesOf(returnCode: string): ReturnRateClass[] {
  const classes: ReturnRateClass[] = [];
  if (UNAUTHORIZED_RATE_CODES.has(returnCode)) classes.push('unauthorized');
  if (ADMINISTRATIVE_RATE_CODES.has(returnCode)) classes.push('administrative');
  classes.push('overall');
  return classes;
}
