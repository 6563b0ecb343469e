import { describe, expect, it } from 'vitest';
import { InterruptedError, LockLostError, ProcessorError, TransientError } from '../../src/domain/errors.js';
import {
  allowlistedError,
  BILLING_RETRY_WAITS_MS,
  billingFailureView,
  classifyFailure,
  CURATED_BILLING_ERRORS,
  dueKey,
  failureState,
  isFailureLive,
  isHeldByLadder,
  MAX_BILLING_ATTEMPTS,
  nextFailure,
} from '../../src/domain/ladder.js';
import { BILLING_STATUSES, type BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { DAY, HOUR, MINUTE } from '../support/time.js';

type FailureInputs = Parameters<typeof isFailureLive>[0];

const BILLING_DATE = '2026-03-01T00:00:00.000000000Z';

function record(overrides: Partial<BillingRecord> = {}): FailureInputs {
  return { billing_status: 'PENDING', billing_date: BILLING_DATE, payment_attempts: 0, ...overrides };
}

/** A record carrying a saved failure keyed to its current due work. */
function failing(count: number, nextAttemptAt: string | undefined, overrides: Partial<BillingRecord> = {}): FailureInputs {
  const base = record(overrides);
  return {
    ...base,
    billing_failed_for: dueKey(base),
    billing_failure_count: count,
    billing_failed_at: '2026-03-01T00:00:00.000000000Z',
    billing_next_attempt_at: nextAttemptAt,
    billing_last_error: 'The payment processor is unavailable.',
  };
}

describe('dueKey', () => {
  it('is {billing_date}#{payment_attempts}', () => {
    expect(dueKey({ billing_date: BILLING_DATE, payment_attempts: 0 })).toBe(`${BILLING_DATE}#0`);
    expect(dueKey({ billing_date: '2026-04-01T00:00:00.000000000Z', payment_attempts: 3 })).toBe('2026-04-01T00:00:00.000000000Z#3');
  });
});

describe('isFailureLive', () => {
  it.each(BILLING_STATUSES.map((status) => [status, status === 'PENDING' || status === 'FAILED'] as const))(
    'a matching record in %s is live: %s',
    (status, live) => {
      expect(isFailureLive(failing(1, '2026-03-01T00:15:00.000000000Z', { billing_status: status }))).toBe(live);
    },
  );

  it('is not live without a saved failure', () => {
    expect(isFailureLive(record())).toBe(false);
  });

  it('is void once payment_attempts moves on (a decline or a settlement changed the due work)', () => {
    const saved = failing(3, '2026-03-01T04:00:00.000000000Z');
    expect(isFailureLive(saved)).toBe(true);
    expect(isFailureLive({ ...saved, payment_attempts: 1 })).toBe(false);
  });

  it('is void once billing_date moves (a due-date change)', () => {
    const saved = failing(3, '2026-03-01T04:00:00.000000000Z');
    expect(isFailureLive({ ...saved, billing_date: '2026-03-05T00:00:00.000000000Z' })).toBe(false);
  });

  it('compares the key exactly (a differently formatted but equal instant is not the same key)', () => {
    const saved = failing(1, '2026-03-01T00:15:00.000000000Z');
    expect(isFailureLive({ ...saved, billing_failed_for: '2026-03-01T00:00:00Z#0' })).toBe(false);
  });
});

describe('failureState and billingFailureView', () => {
  it('is healthy without a record', () => {
    expect(failureState(record())).toBe('healthy');
    expect(billingFailureView(record())).toBeUndefined();
  });

  it('is retrying with a live record and a next attempt', () => {
    const saved = failing(2, '2026-03-01T01:00:00.000000000Z');
    expect(failureState(saved)).toBe('retrying');
    expect(billingFailureView(saved)).toEqual({
      state: 'retrying',
      count: 2,
      failed_at: '2026-03-01T00:00:00.000000000Z',
      next_attempt_at: '2026-03-01T01:00:00.000000000Z',
      last_error: 'The payment processor is unavailable.',
    });
  });

  it('is parked with a live record and no next attempt', () => {
    const saved = failing(8, undefined);
    expect(failureState(saved)).toBe('parked');
    expect(billingFailureView(saved)).toMatchObject({ state: 'parked', count: 8, next_attempt_at: null });
  });

  it('is healthy when the saved record is stale, even if it says parked', () => {
    const stale = { ...failing(8, undefined), payment_attempts: 1 };
    expect(failureState(stale)).toBe('healthy');
    expect(billingFailureView(stale)).toBeUndefined();
  });

  it('is healthy when the status left PENDING/FAILED', () => {
    expect(failureState(failing(8, undefined, { billing_status: 'COMPLETED' }))).toBe('healthy');
  });
});

describe('the ladder', () => {
  it('has the ADR-119 waits and parks on the 8th failure', () => {
    expect(BILLING_RETRY_WAITS_MS).toEqual([15 * MINUTE, HOUR, 4 * HOUR, 12 * HOUR, DAY, DAY, DAY]);
    expect(MAX_BILLING_ATTEMPTS).toBe(8);
  });

  it('walks all eight counted failures: 15m, 1h, 4h, 12h, 24h, 24h, 24h, then parks', () => {
    const first = new Date('2026-03-01T00:00:00.000Z');
    let current: FailureInputs = record();
    let now = first;
    const waits: (number | null)[] = [];
    for (let n = 1; n <= 8; n++) {
      const fields = nextFailure(current, now, `failure ${n}`, formatInstant);
      expect(fields.billing_failure_count).toBe(n);
      expect(fields.billing_failed_for).toBe(dueKey(current));
      expect(fields.billing_failed_at).toBe(formatInstant(now));
      expect(fields.billing_last_error).toBe(`failure ${n}`);
      current = { ...current, ...fields };
      if (fields.billing_next_attempt_at === undefined) {
        waits.push(null);
        break;
      }
      const next = new Date(Date.parse(fields.billing_next_attempt_at));
      waits.push(next.getTime() - now.getTime());
      // The next attempt runs exactly when the ladder allows it, and fails again.
      expect(isHeldByLadder(current, new Date(next.getTime() - 1))).toBe(true);
      expect(isHeldByLadder(current, next)).toBe(false);
      now = next;
    }
    expect(waits).toEqual([15 * MINUTE, HOUR, 4 * HOUR, 12 * HOUR, DAY, DAY, DAY, null]);
    expect(failureState(current)).toBe('parked');
    expect(current.billing_failure_count).toBe(8);
    expect(now.getTime() - first.getTime()).toBe(3 * DAY + 17 * HOUR + 15 * MINUTE);
  });

  it('keeps parking (no next attempt) if a parked record fails again', () => {
    const fields = nextFailure(failing(8, undefined), new Date('2026-03-10T00:00:00Z'), 'again', formatInstant);
    expect(fields.billing_failure_count).toBe(9);
    expect(fields.billing_next_attempt_at).toBeUndefined();
  });

  it('starts again at count 1 when the saved failure is stale', () => {
    const stale = { ...failing(6, '2026-03-03T00:00:00.000000000Z'), payment_attempts: 1 };
    const now = new Date('2026-03-04T00:00:00.000Z');
    const fields = nextFailure(stale, now, 'x', formatInstant);
    expect(fields.billing_failure_count).toBe(1);
    expect(fields.billing_failed_for).toBe(`${BILLING_DATE}#1`);
    expect(fields.billing_next_attempt_at).toBe('2026-03-04T00:15:00.000000000Z');
  });

  it('starts again at count 1 when the status left PENDING/FAILED and came back through another key', () => {
    const moved = { ...failing(7, undefined), billing_date: '2026-04-01T00:00:00.000000000Z' };
    expect(nextFailure(moved, new Date('2026-04-01T00:00:00Z'), 'x', formatInstant).billing_failure_count).toBe(1);
  });

  it('formats instants with the formatter it is given', () => {
    const fields = nextFailure(record(), new Date('2026-03-01T00:00:00.000Z'), 'x', (d) => `<${d.getTime()}>`);
    expect(fields.billing_failed_at).toBe(`<${Date.parse('2026-03-01T00:00:00.000Z')}>`);
    expect(fields.billing_next_attempt_at).toBe(`<${Date.parse('2026-03-01T00:15:00.000Z')}>`);
  });
});

describe('isHeldByLadder', () => {
  const next = '2026-03-01T01:00:00.000000000Z';
  const nextMs = Date.parse('2026-03-01T01:00:00.000Z');

  it('holds a waiting record before next_attempt_at', () => {
    expect(isHeldByLadder(failing(2, next), new Date(nextMs - 1))).toBe(true);
    expect(isHeldByLadder(failing(2, next), new Date(nextMs - HOUR))).toBe(true);
  });

  it('frees a waiting record at and after next_attempt_at', () => {
    expect(isHeldByLadder(failing(2, next), new Date(nextMs))).toBe(false);
    expect(isHeldByLadder(failing(2, next), new Date(nextMs + DAY))).toBe(false);
  });

  it('always holds a parked record', () => {
    expect(isHeldByLadder(failing(8, undefined), new Date('2026-03-01T00:00:00Z'))).toBe(true);
    expect(isHeldByLadder(failing(8, undefined), new Date('2099-01-01T00:00:00Z'))).toBe(true);
  });

  it('never holds a healthy record', () => {
    expect(isHeldByLadder(record(), new Date('2026-03-01T00:00:00Z'))).toBe(false);
  });

  it('never holds a record whose saved failure is stale, even a parked one', () => {
    expect(isHeldByLadder({ ...failing(8, undefined), payment_attempts: 1 }, new Date('2026-03-01T00:00:00Z'))).toBe(false);
    expect(isHeldByLadder({ ...failing(2, next), billing_status: 'ACHSENT' }, new Date(nextMs - 1))).toBe(false);
  });
});

describe('classifyFailure', () => {
  const aborted = () => {
    const controller = new AbortController();
    controller.abort(new Error('shutdown'));
    return controller.signal;
  };

  it('is interrupted for an InterruptedError', () => {
    expect(classifyFailure(new InterruptedError('deadline'))).toBe('interrupted');
  });

  it('is interrupted for any error once the run signal is aborted, even a transient one', () => {
    expect(classifyFailure(new Error('boom'), aborted())).toBe('interrupted');
    expect(classifyFailure(new TransientError('throttled'), aborted())).toBe('interrupted');
    expect(classifyFailure(new ProcessorError('processor_error', 'bad'), aborted())).toBe('interrupted');
  });

  it('is interrupted for a LockLostError (a lost lease ends the run)', () => {
    expect(classifyFailure(new LockLostError('lost'))).toBe('interrupted');
  });

  it('is transient for a TransientError while the run is alive', () => {
    expect(classifyFailure(new TransientError('connection reset'), new AbortController().signal)).toBe('transient');
    expect(classifyFailure(new TransientError('throttled'))).toBe('transient');
  });

  it('counts a ProcessorError', () => {
    expect(classifyFailure(new ProcessorError('processor_unavailable', 'down'))).toBe('counted');
  });

  it('counts a plain Error and non-Error throws', () => {
    expect(classifyFailure(new Error('boom'))).toBe('counted');
    expect(classifyFailure(new TypeError('x is undefined'), new AbortController().signal)).toBe('counted');
    expect(classifyFailure('a string')).toBe('counted');
    expect(classifyFailure(undefined)).toBe('counted');
  });

  it('counts an inner timeout or abort while the run is alive (ADR-119: timeouts count)', () => {
    expect(classifyFailure(new DOMException('The operation timed out.', 'TimeoutError'), new AbortController().signal)).toBe('counted');
    expect(classifyFailure(new DOMException('This operation was aborted', 'AbortError'))).toBe('counted');
  });

  it('ignores message text', () => {
    expect(classifyFailure(new Error('interrupted: transient connection reset'))).toBe('counted');
  });
});

describe('allowlistedError', () => {
  it.each([...CURATED_BILLING_ERRORS])('saves the curated sentence %j as written', (message) => {
    expect(allowlistedError(message, 'sub-123')).toBe(message);
  });

  it.each([
    'connect ECONNREFUSED 10.0.0.7:5432',
    'The payment processor is unavailable', // no full stop: not the curated sentence
    'the payment processor is unavailable.',
    ' The payment processor is unavailable.',
    '',
    'Cannot read properties of undefined (reading "amount")',
  ])('replaces %j with the reference sentence', (message) => {
    expect(allowlistedError(message, 'sub-123')).toBe('An internal error occurred. Reference: sub-123');
  });
});
