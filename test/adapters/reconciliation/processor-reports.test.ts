import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpPaymentsReport } from '../../../src/adapters/payments-service/report.js';
import { StripeBalanceReport } from '../../../src/adapters/stripe/balance-report.js';
import { ProcessorError, TransientError } from '../../../src/domain/errors.js';
import { FakeStripe } from '../stripe/fake-stripe.js';
import type { ServiceCredentials } from '../../../src/adapters/payments-service/client-credentials.js';

/** A token the fake server does not check: these tests are about the answers. */
const bearer: ServiceCredentials = { authorization: async () => 'Bearer test-token', refused: () => undefined };

const fixture = (name: string): Record<string, unknown> => JSON.parse(readFileSync(new URL(`../../fixtures/stripe/${name}`, import.meta.url), 'utf8')) as Record<string, unknown>;
const META = { user_id: 'u-1', billing_date: '2026-12-01T00:00:00.000000000Z', subscription_id: 'sub-1' };

describe('card: Stripe balance transactions through the real SDK against a local server', () => {
  const stripe = new FakeStripe();
  beforeAll(() => stripe.start());
  afterAll(() => stripe.stop());

  it('lists the window with the source expanded, pages by starting_after, and maps charge, refund and dispute adjustments', async () => {
    const bt = fixture('balance-transaction.json');
    const charge = { ...fixture('charge.json'), payment_intent: 'pi_1', metadata: META };
    const refund = { ...fixture('refund.json'), id: 're_1', payment_intent: 'pi_1', metadata: {} };
    const pages = [
      { object: 'list', has_more: true, url: '/v1/balance_transactions', data: [{ ...bt, id: 'txn_1', type: 'charge', amount: 1999, created: 1764590400, source: charge }] },
      {
        object: 'list',
        has_more: false,
        url: '/v1/balance_transactions',
        data: [
          { ...bt, id: 'txn_2', type: 'refund', amount: -500, created: 1764594000, source: refund },
          { ...bt, id: 'txn_3', type: 'adjustment', amount: -1999, created: 1764597600, source: { id: 'dp_1', object: 'dispute', charge: 'ch_1', payment_intent: 'pi_1' } },
          { ...bt, id: 'txn_4', type: 'payout', amount: -10000, created: 1764597600, source: 'po_1' },
        ],
      },
    ];
    stripe.reply = () => ({ status: 200, body: pages[stripe.requests.length - 1] });
    const report = new StripeBalanceReport(stripe.client());
    const first = await report.page('card', '2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z', null);
    const second = await report.page('card', '2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z', first.next);

    expect(stripe.requests.map((r) => r.path)).toEqual(['/v1/balance_transactions', '/v1/balance_transactions']);
    expect(stripe.requests[0]!.query.get('created[gte]')).toBe('1796083200');
    expect(stripe.requests[0]!.query.get('created[lt]')).toBe('1796169600');
    expect(stripe.requests[0]!.query.get('expand[0]')).toBe('data.source');
    expect(stripe.requests[1]!.query.get('starting_after')).toBe('txn_1');
    expect(first.items).toEqual([expect.objectContaining({ kind: 'debit', transaction_id: 'pi_1', amount_cents: 1999, record_key: 'sub#sub-1', user_id: 'u-1' })]);
    expect(second.next).toBeNull();
    expect(second.items).toEqual([
      expect.objectContaining({ kind: 'refund', transaction_id: 're_1', original_transaction_id: 'pi_1', amount_cents: 500 }),
      expect.objectContaining({ kind: 'chargeback', original_transaction_id: 'pi_1', amount_cents: 1999 }),
    ]);
    expect(stripe.requests.some((r) => r.path.includes('search'))).toBe(false);
  });
});

describe('ACH and pinless: the payments service report', () => {
  let server: Server;
  let base: string;
  let answer: { status: number; body: string } = { status: 200, body: '{}' };
  const urls: string[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      urls.push(req.url ?? '');
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const item = (extra: Record<string, unknown>) => ({
    transaction_id: 'sim_1',
    type: 'debit',
    rail: 'ach',
    amount_cents: 1999,
    occurred_at: '2026-12-01T10:00:00Z',
    reference: { kind: 'subscription', user_id: 'u-1', billing_date: '2026-12-01T00:00:00Z', subscription_id: 'sub-1' },
    instrument_id: 'acct-1',
    ...extra,
  });

  it('reads a page of the contract, keeps the asked rail, passes the cursor on', async () => {
    answer = { status: 200, body: JSON.stringify({ items: [item({}), item({ transaction_id: 'sim_2', rail: 'pinless' }), item({ transaction_id: 'ret_1', original_transaction_id: 'sim_1', type: 'return', return_code: 'R01' })], next: 'c2' }) };
    const page = await new HttpPaymentsReport(base, bearer).page('ach', '2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z', 'c1');
    expect(urls.at(-1)).toBe('/reports/transactions?from=2026-12-01T00%3A00%3A00Z&to=2026-12-02T00%3A00%3A00Z&cursor=c1');
    expect(page.next).toBe('c2');
    expect(page.items).toEqual([
      expect.objectContaining({ kind: 'debit', transaction_id: 'sim_1', record_key: 'sub#sub-1' }),
      expect.objectContaining({ kind: 'return', original_transaction_id: 'sim_1' }),
    ]);
  });

  it('a page that breaks the contract is the processor fault; a 503 is transient', async () => {
    answer = { status: 200, body: JSON.stringify({ items: [item({ amount_cents: -5 })], next: null }) };
    await expect(new HttpPaymentsReport(base, bearer).page('ach', '2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z', null)).rejects.toBeInstanceOf(ProcessorError);
    answer = { status: 503, body: '{}' };
    await expect(new HttpPaymentsReport(base, bearer).page('ach', '2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z', null)).rejects.toBeInstanceOf(TransientError);
  });
});
