import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';

/** Nine fractional digits in UTC ("2026-12-01T00:00:00.000000000Z"): string order is time order in DynamoDB keys. */
export type Instant = string;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

export class InvalidInstantError extends Error {
  override readonly name = 'InvalidInstantError';
  readonly code = 'invalid_instant';
}

/** Formats a Date (ms precision) plus optional extra nanoseconds within that millisecond. */
export function formatInstant(date: Date, extraNanos = 0): Instant {
  if (Number.isNaN(date.getTime())) throw new InvalidInstantError('invalid date');
  // Outside years 0000-9999 toISOString switches to "+010000-..." and string order stops being time order.
  const year = date.getUTCFullYear();
  if (year < 0 || year > 9999) throw new InvalidInstantError(`year out of range: ${year}`);
  if (!Number.isFinite(extraNanos)) throw new InvalidInstantError(`invalid nanoseconds: ${extraNanos}`);
  const iso = date.toISOString(); // 2026-12-01T00:00:00.000Z
  const ms = iso.slice(20, 23);
  const nanos = String(Math.max(0, Math.min(999_999, Math.trunc(extraNanos)))).padStart(6, '0');
  return `${iso.slice(0, 19)}.${ms}${nanos}Z`;
}

/** Parses any RFC3339 timestamp with a valid calendar date; sub-millisecond digits are kept in `nanos`. */
export function parseInstant(value: string): { date: Date; subMillisNanos: number } {
  const m = RFC3339.exec(value);
  if (!m) throw new InvalidInstantError(`not an RFC3339 timestamp: ${JSON.stringify(value)}`);
  const [, y, mo, d, h, mi, s, frac = '', zone] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month - 1)) {
    throw new InvalidInstantError(`impossible date: ${value}`);
  }
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) throw new InvalidInstantError(`impossible time: ${value}`);
  const padded = frac.padEnd(9, '0');
  const millis = Number(padded.slice(0, 3));
  const subMillisNanos = Number(padded.slice(3));
  let epoch = utcEpoch(year, month - 1, day, Number(h), Number(mi), Number(s), millis);
  if (zone && zone !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const [zh = 0, zm = 0] = zone.slice(1).split(':').map(Number);
    if (zh > 23 || zm > 59) throw new InvalidInstantError(`impossible offset: ${value}`);
    epoch -= sign * (zh * 60 + zm) * 60_000;
  }
  return { date: new Date(epoch), subMillisNanos };
}

/** Normalises any RFC3339 timestamp to the stored nine-digit UTC form. */
export function normalizeInstant(value: string): Instant {
  const { date, subMillisNanos } = parseInstant(value);
  return formatInstant(date, subMillisNanos);
}

export function toDate(instant: Instant): Date {
  return parseInstant(instant).date;
}

export function epochMillis(instant: Instant): number {
  return toDate(instant).getTime();
}

export function daysInMonth(year: number, monthIndex: number): number {
  return new Date(utcEpoch(year, monthIndex + 1, 0)).getUTCDate();
}

/** Date.UTC without its two-digit-year rule (Date.UTC(50, 0) is 1950, not year 50). */
function utcEpoch(year: number, monthIndex: number, day: number, h = 0, mi = 0, s = 0, ms = 0): number {
  const date = new Date(0);
  date.setUTCFullYear(year, monthIndex, day);
  date.setUTCHours(h, mi, s, ms);
  return date.getTime();
}

/** Strictly after `previous` by at least one nanosecond, and not before `now`. */
export function nextStamp(now: Date, previous: Instant | undefined, nanosHint = 0): Instant {
  const candidate = formatInstant(now, nanosHint);
  if (previous === undefined) return candidate;
  // String order is time order only between normalised stamps ("+05:00" or 3 digits would compare wrongly).
  const last = normalizeInstant(previous);
  if (candidate > last) return candidate;
  return addNanos(last, 1);
}

export function addNanos(instant: Instant, nanos: number): Instant {
  const { date, subMillisNanos } = parseInstant(instant);
  const total = subMillisNanos + nanos;
  const carryMs = Math.floor(total / 1_000_000);
  return formatInstant(new Date(date.getTime() + carryMs), total - carryMs * 1_000_000);
}

/** zod: any RFC3339 timestamp with a real calendar date, normalised to the stored form. */
export const instantSchema = lazySchema(() => z.pipe(z.string(), z.transform((value, ctx) => {
  try {
    return normalizeInstant(value);
  } catch (error) {
    ctx.issues.push({ code: 'custom', message: (error as Error).message, input: value });
    return z.NEVER;
  }
})));

/** ISO-8601 duration subset used by the local clock: PnDTnHnMnS. */
export function parseDurationMs(value: string): number {
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(value);
  if (!m || value === 'P' || value.endsWith('T')) throw new InvalidInstantError(`not an ISO-8601 duration: ${value}`);
  const [, d = '0', h = '0', mi = '0', s = '0'] = m;
  return ((Number(d) * 24 + Number(h)) * 60 + Number(mi)) * 60_000 + Math.round(Number(s) * 1000);
}
