import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyBillingEvent, applyIntentChange, successorRecord, type WritableAttributes } from '../../src/domain/billing-record.js';
import { upgradeLegacyIntent } from '../../src/adapters/dynamodb/billing-item.js';
import { INTENT_KEYS, intentOf, successorPlan, rememberEvent, REMEMBERED_EVENT_IDS } from '../../src/domain/intent.js';
import { BILLING_STATUSES, type BillingRecord } from '../../src/domain/records.js';
import { billingTransitions, type BillingEvent } from '../../src/domain/transitions.js';
import { makeRecord } from '../support/billing-fixtures.js';

const NOW = new Date('2026-12-10T12:00:00.000Z');
const ids = { newId: () => crypto.randomUUID() };

const intentArb = fc.record(
  {
    billing_anchor_day: fc.integer({ min: 1, max: 31 }),
    paused_months: fc.integer({ min: 0, max: 12 }),
    cancel_requested_at: fc.constant('2026-12-01T00:00:00.000000000Z'),
    membership_event_ids: fc.array(fc.uuid(), { minLength: 1, maxLength: 4 }),
    membership_event_at: fc.constant('2026-12-01T00:00:00.000000000Z'),
  },
  { requiredKeys: [] },
);

describe('membership intent survives every other writer (DESIGN 2.9)', () => {
  it('applyBillingEvent carries the intent unchanged, even when an untyped caller names intent keys in `set`', () => {
    const events = billingTransitions.events();
    fc.assert(
      fc.property(intentArb, fc.constantFrom(...events), fc.constantFrom(...BILLING_STATUSES), (intent, event, status) => {
        const record: BillingRecord = { ...makeRecord({ billing_status: status as BillingRecord['billing_status'] }), ...intent };
        if (!billingTransitions.allows(record.billing_status, event as BillingEvent)) return;
        const hostile = { paused_months: 0, cancel_requested_at: undefined, billing_anchor_day: 3, membership_event_ids: [], payment_error: 'x' } as unknown as WritableAttributes;
        const after = applyBillingEvent(record, event as BillingEvent, NOW, { set: hostile, updatedEvent: 'WAIVED' });
        expect(intentOf(after)).toEqual(intentOf(record));
        expect(after.payment_error).toBe('x');
      }),
    );
  });

  it('applyIntentChange replaces the intent as a whole (the owners of intent: membership events, the due-date anchor)', () => {
    const record: BillingRecord = { ...makeRecord(), cancel_requested_at: '2026-12-01T00:00:00.000000000Z', billing_anchor_day: 1 };
    const after = applyIntentChange(record, 'DUE_DATE_CHANGED', NOW, { ...intentOf(record), billing_anchor_day: 20 });
    expect(after).toMatchObject({ cancel_requested_at: record.cancel_requested_at, billing_anchor_day: 20 });
  });

  it('a successor inherits the intent; a cancel request ends the chain; a pause counts calendar months whatever the term', () => {
    fc.assert(
      fc.property(intentArb, fc.constantFrom('MONTHLY', 'ANNUAL'), (intent, term) => {
        const record: BillingRecord = { ...makeRecord({ billing_date: '2027-01-15T00:00:00.000000000Z', term: term as BillingRecord['term'] }), ...intent };
        const next = successorRecord(record, NOW, ids, record.last_run_date);
        if (intent.cancel_requested_at !== undefined) {
          expect(next).toBeUndefined();
          return;
        }
        expect(next).toBeDefined();
        const months = intent.paused_months ?? 0;
        for (const key of INTENT_KEYS) if (key !== 'paused_months') expect(next![key]).toEqual(record[key]);
        if (months > 0) {
          expect(next!.billing_date.slice(0, 7)).toBe('2027-02');
          expect(next!.billing_status).toBe(months > 1 ? 'PAUSED' : 'PENDING');
          expect(next!.paused_months).toBe(months > 1 ? months - 1 : undefined);
        } else {
          expect(next!.billing_date.slice(0, 7)).toBe(term === 'ANNUAL' ? '2028-01' : '2027-02');
        }
      }),
    );
  });

  it('reads the old cancel marker and single event id once, in the new form', () => {
    const legacy: BillingRecord = { ...makeRecord(), updated_event: 'CANCEL_REQUESTED', membership_event_id: 'evt-1' };
    const upgraded = upgradeLegacyIntent(legacy);
    expect(upgraded.cancel_requested_at).toBe(legacy.last_run_date);
    expect(upgraded.membership_event_ids).toEqual(['evt-1']);
    expect(upgraded.membership_event_id).toBeUndefined();
    expect(successorPlan(upgraded)).toBeUndefined();
  });

  it('remembers a bounded number of applied event ids, the newest last', () => {
    let record: BillingRecord = makeRecord();
    for (let i = 0; i < REMEMBERED_EVENT_IDS + 5; i++) record = { ...record, ...rememberEvent(record, { event_id: `e${i}`, occurred_at: '2026-12-01T00:00:00.000000000Z' }) };
    expect(record.membership_event_ids).toHaveLength(REMEMBERED_EVENT_IDS);
    expect(record.membership_event_ids!.at(-1)).toBe(`e${REMEMBERED_EVENT_IDS + 4}`);
  });
});
