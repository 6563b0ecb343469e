import { describe, expect, it } from 'vitest';
import { cardCeilingReached, presentmentsToKeep, PRESENTMENT_WINDOW_MS } from '../../../src/domain/instruments/ceilings.js';
import { applyInstrumentWrite, emptyInstruments, type Instrument, type InstrumentsItem, type Presentment } from '../../../src/domain/instruments/instrument.js';
import type { DeclineClass } from '../../../src/domain/records.js';
import { formatInstant } from '../../../src/domain/time.js';

const NOW = Date.parse('2026-06-30T12:00:00.000Z');
const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

function card(brand: string | undefined, rail: 'card' | 'pinless' = 'card'): Instrument {
  return { instrument_id: `${rail}:fp_1`, rail, fingerprint: 'fp_1', ...(brand !== undefined ? { brand } : {}) };
}

function declined(agoMs: number, initiated: Presentment['initiated'] = 'merchant', cls: DeclineClass = 'retry_later'): Presentment {
  return { at: formatInstant(new Date(NOW - agoMs)), initiated, reference: 'subscription:s1', decline_class: cls };
}

function itemWith(instrument: Instrument, list: Presentment[]): InstrumentsItem {
  return { ...emptyInstruments('u1'), presentments: { [instrument.instrument_id]: list } };
}

/** `n` declines spread evenly over the last `spanMs`, the oldest first. */
function spread(n: number, spanMs: number, initiated: Presentment['initiated'] = 'merchant'): Presentment[] {
  return Array.from({ length: n }, (_, i) => declined(spanMs - (i * spanMs) / n, initiated));
}

const now = new Date(NOW);

describe('cardCeilingReached: Visa', () => {
  const visa = card('visa');

  it('allows a 20th decline and refuses after it: visa.ceiling_30d, free when the oldest leaves the 30 days', () => {
    expect(cardCeilingReached(itemWith(visa, spread(19, 20 * DAY)), visa, 'merchant', now)).toBeUndefined();
    const twenty = spread(20, 20 * DAY);
    const reached = cardCeilingReached(itemWith(visa, twenty), visa, 'merchant', now);
    expect(reached).toEqual({ decided_by: 'visa.ceiling_30d', instrument_id: 'card:fp_1', free_at: formatInstant(new Date(Date.parse(twenty[0]!.at) + 30 * DAY)) });
    // At that instant the oldest is out of the window and one more is allowed.
    expect(cardCeilingReached(itemWith(visa, twenty), visa, 'merchant', new Date(Date.parse(reached!.free_at)))).toBeUndefined();
  });

  it('counts merchant- and customer-initiated declines apart', () => {
    const merchant = spread(20, 10 * DAY, 'merchant');
    expect(cardCeilingReached(itemWith(visa, merchant), visa, 'customer', now)).toBeUndefined();
    expect(cardCeilingReached(itemWith(visa, merchant), visa, 'merchant', now)?.decided_by).toBe('visa.ceiling_30d');
    expect(cardCeilingReached(itemWith(visa, spread(20, 10 * DAY, 'customer')), visa, 'customer', now)?.decided_by).toBe('visa.ceiling_30d');
  });

  it('counts declines only: approved presentments and declines older than 30 days do not count', () => {
    const approved: Presentment[] = Array.from({ length: 30 }, (_, i) => ({ at: formatInstant(new Date(NOW - i * HOUR)), initiated: 'merchant' }));
    const old = Array.from({ length: 25 }, (_, i) => declined(31 * DAY + i * HOUR));
    expect(cardCeilingReached(itemWith(visa, [...old, ...approved]), visa, 'merchant', now)).toBeUndefined();
  });

  it('allows none by anyone after a category-1 decline within the window: visa.category1', () => {
    const lost = declined(5 * DAY, 'merchant', 'do_not_retry');
    expect(cardCeilingReached(itemWith(visa, [lost]), visa, 'customer', now)).toEqual({
      decided_by: 'visa.category1',
      instrument_id: 'card:fp_1',
      free_at: formatInstant(new Date(NOW - 5 * DAY + 30 * DAY)),
    });
    // A do_not_retry decline is no category-1 rule on Mastercard: its count ceilings only.
    expect(cardCeilingReached(itemWith(card('mastercard'), [lost]), card('mastercard'), 'merchant', now)).toBeUndefined();
  });
});

describe('cardCeilingReached: Mastercard and unknown networks', () => {
  const mc = card('MasterCard', 'pinless');

  it('refuses the 11th in 24 hours (mastercard.ceiling_24h), free 24 hours after the oldest of the ten', () => {
    const ten = spread(10, 20 * HOUR);
    expect(cardCeilingReached(itemWith(mc, ten.slice(1)), mc, 'merchant', now)).toBeUndefined();
    expect(cardCeilingReached(itemWith(mc, ten), mc, 'merchant', now)).toEqual({
      decided_by: 'mastercard.ceiling_24h',
      instrument_id: 'pinless:fp_1',
      free_at: formatInstant(new Date(Date.parse(ten[0]!.at) + DAY)),
    });
  });

  it('refuses the 36th in 30 days (mastercard.ceiling_30d) though fewer than ten fell in the last day', () => {
    const list = spread(35, 28 * DAY);
    expect(cardCeilingReached(itemWith(mc, list.slice(1)), mc, 'merchant', now)).toBeUndefined();
    expect(cardCeilingReached(itemWith(mc, list), mc, 'merchant', now)?.decided_by).toBe('mastercard.ceiling_30d');
  });

  it('when both bind, names the one that frees up later', () => {
    // 35 in 30 days, the last ten of them in the last 12 hours.
    const list = [...spread(25, 25 * DAY), ...spread(10, 12 * HOUR)].sort((a, b) => (a.at < b.at ? -1 : 1));
    const reached = cardCeilingReached(itemWith(mc, list), mc, 'merchant', now)!;
    expect(reached.decided_by).toBe('mastercard.ceiling_30d');
    expect(Date.parse(reached.free_at)).toBe(Date.parse(list[0]!.at) + 30 * DAY);
  });

  it('a card whose network is not known gets 10 in 24 hours and 20 in 30 days', () => {
    const unknown = card(undefined, 'pinless');
    expect(cardCeilingReached(itemWith(unknown, spread(10, 10 * HOUR)), unknown, 'merchant', now)?.decided_by).toBe('mastercard.ceiling_24h');
    expect(cardCeilingReached(itemWith(unknown, spread(20, 20 * DAY)), unknown, 'merchant', now)?.decided_by).toBe('visa.ceiling_30d');
  });

  it('an ACH instrument and no instrument have no ceiling', () => {
    const ach: Instrument = { instrument_id: 'ach:a:b', rail: 'ach', account_id: 'a', authorization_id: 'b' };
    expect(cardCeilingReached(itemWith(ach, spread(50, DAY)), ach, 'merchant', now)).toBeUndefined();
    expect(cardCeilingReached(emptyInstruments('u1'), undefined, 'merchant', now)).toBeUndefined();
  });
});

describe('presentments pruned past 30 days', () => {
  it('keeps what is inside the window; nothing to prune is undefined (the write appends)', () => {
    const inside = declined(PRESENTMENT_WINDOW_MS - 1);
    const outside = declined(PRESENTMENT_WINDOW_MS);
    expect(presentmentsToKeep([outside, inside], now)).toEqual([inside]);
    expect(presentmentsToKeep([inside], now)).toBeUndefined();
  });

  it('a write with `kept` replaces the list with the kept ones and the new one', () => {
    const instrument = card('visa');
    const outside = declined(40 * DAY);
    const inside = declined(DAY);
    const fresh: Presentment = { at: formatInstant(now), initiated: 'merchant' };
    const after = applyInstrumentWrite(itemWith(instrument, [outside, inside]), { user_id: 'u1', presentments: [{ instrument_id: instrument.instrument_id, presentment: fresh, kept: [inside] }] });
    expect(after.presentments[instrument.instrument_id]).toEqual([inside, fresh]);
  });
});
