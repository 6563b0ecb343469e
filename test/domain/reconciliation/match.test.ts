import { describe, expect, it } from 'vitest';
import { debitMovement, type MoneyMovement } from '../../../src/domain/money-movements.js';
import { matchDay, type ProcessorMovement } from '../../../src/domain/reconciliation/match.js';

const DAY = '2026-12-02';

function debit(id: string, cents: number, at = `${DAY}T10:00:00.000Z`, record = `sub#${id}`): MoneyMovement {
  return debitMovement({ rail: 'ach', transaction_id: id, amount_cents: cents, presented_at: new Date(at), user_id: `u-${id}`, record_key: record, idempotency_key: `${id}:1` });
}
function outcome(kind: MoneyMovement['kind'], original: string, cents: number, at = `${DAY}T12:00:00.000000000Z`, extra: Partial<MoneyMovement> = {}): MoneyMovement {
  return { movement_id: `m-${kind}-${original}-${at}`, rail: 'ach', kind, original_transaction_id: original, amount_cents: cents, occurred_at: at, user_id: `u-${original}`, record_key: `sub#${original}`, source: 'test', ...extra };
}
function theirs(kind: ProcessorMovement['kind'], id: string, cents: number, at = `${DAY}T10:00:01.000Z`, extra: Partial<ProcessorMovement> = {}): ProcessorMovement {
  return { transaction_id: kind === 'debit' ? id : `${kind}-${id}`, ...(kind === 'debit' ? {} : { original_transaction_id: id }), kind, amount_cents: cents, occurred_at: at, record_key: `sub#${id}`, ...extra };
}

describe('matchDay', () => {
  it('a clean day reports nothing, with equal totals on both sides', () => {
    const result = matchDay('ach', DAY, [debit('a', 1999), debit('b', 500), outcome('return', 'b', 500)], [theirs('debit', 'a', 1999), theirs('debit', 'b', 500), theirs('return', 'b', 500)]);
    expect(result.exceptions).toEqual([]);
    expect(result.ours).toEqual({ count: 3, total_cents: 1999 });
    expect(result.theirs).toEqual({ count: 3, total_cents: 1999 });
    expect(result.gross_drift_cents).toBe(0);
  });

  it('names each difference with its code and signed amount; gross drift is the sum of their absolute amounts', () => {
    const ours = [debit('dropped', 1000), debit('skewed', 2000), debit('twice', 300), debit('late', 700)];
    const processor = [
      theirs('debit', 'skewed', 2050),
      theirs('debit', 'twice', 300),
      theirs('debit', 'twice-dup', 300, undefined, { record_key: 'sub#twice' }),
      theirs('debit', 'late', 700),
      theirs('return', 'late', 700),
      theirs('debit', 'phantom', 4200),
    ];
    const result = matchDay('ach', DAY, ours, processor);
    const byCode = Object.fromEntries(result.exceptions.map((e) => [e.code, e.amount_cents]));
    expect(byCode).toEqual({ missing_at_processor: -1000, amount_mismatch: 50, duplicate_charge: 300, status_mismatch: -700, missing_in_records: 4200 });
    expect(result.gross_drift_cents).toBe(1000 + 50 + 300 + 700 + 4200);
    expect(result.net_drift_cents).toBe(-1000 + 50 + 300 - 700 + 4200);
  });

  it('matches a return or settlement by its original debit id, and one debit written by the attempt and a webhook once', () => {
    const webhookCopy = { ...debit('a', 1999), movement_id: 'stripe:evt', source: 'stripe:evt' };
    const result = matchDay('ach', DAY, [debit('a', 1999), webhookCopy, outcome('settlement', 'a', 1999)], [theirs('debit', 'a', 1999), theirs('settlement', 'a', 1999)]);
    expect(result.exceptions).toEqual([]);
  });

  it('a row that carries the 4.1/6.1 exception is known: the difference it explains is not new', () => {
    const known = { ...debit('a', 1500), movement_id: 'stripe:evt', known_exception: 'amount_mismatch' as const };
    expect(matchDay('ach', DAY, [debit('a', 1999), known], [theirs('debit', 'a', 1500)]).exceptions).toEqual([]);
    const stillOff = matchDay('ach', DAY, [debit('a', 1999), known], [theirs('debit', 'a', 1400)]).exceptions;
    expect(stillOff).toEqual([expect.objectContaining({ code: 'amount_mismatch', amount_cents: -100, known: true })]);
  });

  it('meets the other half across midnight, and reports a difference on its first day only', () => {
    const ours = [debit('edge', 1999, `${DAY}T23:59:59.900Z`)];
    const processor = [theirs('debit', 'edge', 1999, '2026-12-03T00:00:00.100Z')];
    expect(matchDay('ach', DAY, ours, processor).exceptions).toEqual([]);
    expect(matchDay('ach', '2026-12-03', ours, processor).exceptions).toEqual([]);
    const lost = [debit('gone', 10, `${DAY}T23:59:59.900Z`)];
    expect(matchDay('ach', DAY, lost, []).exceptions).toHaveLength(1);
    expect(matchDay('ach', '2026-12-03', lost, []).exceptions).toEqual([]);
  });

  it('gives the same exception the same id in every run', () => {
    const a = matchDay('ach', DAY, [debit('x', 1)], []).exceptions[0]!;
    const b = matchDay('ach', DAY, [debit('x', 1), debit('y', 2)], [theirs('debit', 'y', 2)]).exceptions[0]!;
    expect(a.exception_id).toBe(b.exception_id);
    expect(a.exception_id).not.toBe(matchDay('pinless', DAY, [{ ...debit('x', 1), rail: 'pinless' }], []).exceptions[0]!.exception_id);
  });

  it('takes the largest of running refund totals (partial card refunds) against the refunds reported', () => {
    const r1 = outcome('refund', 'c', 500, undefined, { cumulative: true, movement_id: 'r1' });
    const r2 = outcome('refund', 'c', 800, `${DAY}T13:00:00.000000000Z`, { cumulative: true, movement_id: 'r2' });
    expect(matchDay('ach', DAY, [r1, r2], [theirs('refund', 'c', 500), { ...theirs('refund', 'c', 300), transaction_id: 're_2' }]).exceptions).toEqual([]);
  });
});
