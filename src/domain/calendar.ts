import { daysInMonth } from './time.js';
import type { Term } from './records.js';

/** Month ends clamp but keep the anchor day (Jan 31 → Feb 28 → Mar 31); Friday billing takes the Nth Friday. UTC. */
export function nextBillingDate(
  billingDate: Date,
  term: Term,
  options: { fridayBilling?: number | undefined; anchorDay?: number | undefined } = {},
): Date {
  const monthsAhead = term === 'ANNUAL' ? 12 : 1;
  const targetYear = billingDate.getUTCFullYear() + Math.floor((billingDate.getUTCMonth() + monthsAhead) / 12);
  const targetMonth = (billingDate.getUTCMonth() + monthsAhead) % 12;
  const timeOfDay = billingDate.getTime() - Date.UTC(billingDate.getUTCFullYear(), billingDate.getUTCMonth(), billingDate.getUTCDate());
  if (options.fridayBilling !== undefined) {
    const day = nthFridayOfMonth(targetYear, targetMonth, options.fridayBilling);
    return new Date(Date.UTC(targetYear, targetMonth, day) + timeOfDay);
  }
  const anchor = options.anchorDay ?? billingDate.getUTCDate();
  // Day 0 or 32 would silently roll into the neighbouring month.
  if (!Number.isInteger(anchor) || anchor < 1 || anchor > 31) throw new RangeError(`anchorDay must be 1-31, got ${anchor}`);
  const day = Math.min(anchor, daysInMonth(targetYear, targetMonth));
  return new Date(Date.UTC(targetYear, targetMonth, day) + timeOfDay);
}

/** Day of month of the Nth Friday (1-5); when the month has no such Friday, its last Friday. */
export function nthFridayOfMonth(year: number, monthIndex: number, n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > 5) throw new RangeError(`friday_billing must be 1-5, got ${n}`);
  const firstWeekday = new Date(Date.UTC(year, monthIndex, 1)).getUTCDay();
  const firstFriday = 1 + ((5 - firstWeekday + 7) % 7);
  let day = firstFriday + (n - 1) * 7;
  while (day > daysInMonth(year, monthIndex)) day -= 7;
  return day;
}

/** Adds whole calendar months, clamping to month end (used for pause windows). */
export function addMonths(date: Date, months: number): Date {
  const total = date.getUTCMonth() + months;
  const year = date.getUTCFullYear() + Math.floor(total / 12);
  const month = ((total % 12) + 12) % 12;
  const day = Math.min(date.getUTCDate(), daysInMonth(year, month));
  return new Date(
    Date.UTC(year, month, day, date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds(), date.getUTCMilliseconds()),
  );
}
