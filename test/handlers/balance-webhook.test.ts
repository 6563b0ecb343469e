import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signPayload } from '../../src/handlers/shared/signature.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { balanceWebhookEvent } from '../support/http-events.js';
import { createBalanceWebhookHandler } from '../../src/handlers/balance-webhook.js';
import type { HttpEvent } from '../../src/handlers/shared/http.js';
import { responseOf } from '../support/http-events.js';
import { callerFor } from './api-fixtures.js';

let app: TestApp;
let api: ReturnType<typeof callerFor>;
let call: { raw: (event: HttpEvent) => Promise<ReturnType<typeof responseOf>> };

beforeAll(async () => {
  app = await createTestApp({ label: 'balance-webhook' });
  api = callerFor(app);
  // The deployed function's deps: its manifest's grants behind the guard (DESIGN 15).
  const handler = createBalanceWebhookHandler(app.depsFor('balance-webhook'));
  call = { raw: async (event) => responseOf(await handler(event)) };
});

beforeEach(() => app.balanceEventsQueue.clear());

/** The sender's wall-clock seconds: signatures are checked against wall time (DESIGN 9). */
const nowS = () => Math.floor(app.wallClock.now().getTime() / 1000);
const event = (overrides: Record<string, unknown> = {}) => ({
  event_id: 'evt_123',
  user_id: 'user-1',
  institution_id: 'ins_9',
  available_balance_cents: 120_000,
  current_balance_cents: 125_000,
  occurred_at: '2026-12-01T11:59:00Z',
  ...overrides,
});

describe('POST /webhooks/balance', () => {
  it('verifies the signature, validates and enqueues with message id = event_id (202)', async () => {
    const res = await call.raw(balanceWebhookEvent(event({ calc_available_balance_cents: -300 }), TEST_SECRETS.balanceWebhook, nowS()));
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ accepted: true });
    expect(app.balanceEventsQueue.sent).toHaveLength(1);
    expect(app.balanceEventsQueue.sent[0]!.id).toBe('evt_123');
    expect(app.balanceEventsQueue.bodies()[0]).toEqual({ ...event({ calc_available_balance_cents: -300 }), occurred_at: '2026-12-01T11:59:00.000000000Z' });
  });

  it('accepts a $default delivery and a base64-encoded body', async () => {
    expect((await call.raw(balanceWebhookEvent(event({ event_id: 'evt_default' }), TEST_SECRETS.balanceWebhook, nowS(), { defaultRoute: true }))).status).toBe(202);
    const raw = JSON.stringify(event({ event_id: 'evt_b64' }));
    const encoded = balanceWebhookEvent(raw, TEST_SECRETS.balanceWebhook, nowS());
    encoded.body = Buffer.from(raw).toString('base64');
    encoded.isBase64Encoded = true;
    expect((await call.raw(encoded)).status).toBe(202);
  });

  it.each([
    ['missing', (_raw: string) => undefined as unknown as string],
    ['stale (6 minutes old)', (raw: string) => signPayload(raw, TEST_SECRETS.balanceWebhook, nowS() - 360)],
    ['from the future', (raw: string) => signPayload(raw, TEST_SECRETS.balanceWebhook, nowS() + 360)],
    ['forged with another secret', (raw: string) => signPayload(raw, 'not-the-secret', nowS())],
    ['over another body', (raw: string) => signPayload(`${raw} `, TEST_SECRETS.balanceWebhook, nowS())],
    ['garbage', () => 'sha256=deadbeef'],
  ])('refuses a signature that is %s with 400 before reading the body', async (_what, sign) => {
    const raw = JSON.stringify(event());
    const delivery = balanceWebhookEvent(raw, TEST_SECRETS.balanceWebhook, nowS());
    const signature = sign(raw);
    if (signature === undefined) delete delivery.headers['x-balance-signature'];
    else delivery.headers['x-balance-signature'] = signature;
    const res = await call.raw(delivery);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_signature');
    expect(app.balanceEventsQueue.sent).toHaveLength(0);
  });

  it('refuses an unsigned malformed body as a signature failure, not a parse failure', async () => {
    const delivery = balanceWebhookEvent('{not json', TEST_SECRETS.balanceWebhook, nowS(), { signature: 't=1,v1=00' });
    const res = await call.raw(delivery);
    expect(res.body.error.code).toBe('invalid_signature');
  });

  it.each([
    ['malformed JSON', '{"event_id":'],
    ['fractional cents', event({ available_balance_cents: 10.5 })],
    ['string cents', event({ current_balance_cents: '100' })],
    ['no event_id', event({ event_id: undefined })],
    ['an event_id with a slash and a space', event({ event_id: 'evt 1/2' })],
    ['an impossible occurred_at', event({ occurred_at: '2026-13-01T00:00:00Z' })],
    ['no institution_id', event({ institution_id: undefined })],
  ])('refuses a correctly signed body with %s (400)', async (_what, body) => {
    const res = await call.raw(balanceWebhookEvent(body, TEST_SECRETS.balanceWebhook, nowS()));
    expect(res.status).toBe(400);
    expect(app.balanceEventsQueue.sent).toHaveLength(0);
  });

  it('is no longer served by the api function (404 there)', async () => {
    const res = await api.raw(balanceWebhookEvent(event({ event_id: 'evt_api' }), TEST_SECRETS.balanceWebhook, nowS()));
    expect(res.status).toBe(404);
    expect(app.balanceEventsQueue.sent).toHaveLength(0);
  });
});

describe('POST /webhooks/balance: events claimed by id (DESIGN 15)', () => {
  it('answers a replayed event id 200 duplicate and enqueues nothing more', async () => {
    const body = event({ event_id: 'evt_replayed' });
    expect((await call.raw(balanceWebhookEvent(body, TEST_SECRETS.balanceWebhook, nowS()))).status).toBe(202);
    const replay = await call.raw(balanceWebhookEvent(body, TEST_SECRETS.balanceWebhook, nowS()));
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ status: 'duplicate' });
    expect(app.balanceEventsQueue.sent.map((m) => m.id)).toEqual(['evt_replayed']);
    const claim = await app.deps.balanceEventClaims.get('evt_replayed');
    expect(claim).toMatchObject({ status: 'processed', event_type: 'balance' });
    expect(claim!.expires_at).toBeGreaterThan(Math.floor(app.clock.now().getTime() / 1000));
  });

  it('enqueues a different event id with the same balances as today', async () => {
    expect((await call.raw(balanceWebhookEvent(event({ event_id: 'evt_same_a' }), TEST_SECRETS.balanceWebhook, nowS()))).status).toBe(202);
    expect((await call.raw(balanceWebhookEvent(event({ event_id: 'evt_same_b' }), TEST_SECRETS.balanceWebhook, nowS()))).status).toBe(202);
    expect(app.balanceEventsQueue.sent.map((m) => m.id)).toEqual(['evt_same_a', 'evt_same_b']);
  });

  it('releases the claim when the enqueue fails, so the redelivery is enqueued', async () => {
    const body = event({ event_id: 'evt_send_fails' });
    app.balanceEventsQueue.failNext = 1;
    expect((await call.raw(balanceWebhookEvent(body, TEST_SECRETS.balanceWebhook, nowS()))).status).toBeGreaterThanOrEqual(500);
    expect(await app.deps.balanceEventClaims.get('evt_send_fails')).toBeUndefined();
    expect((await call.raw(balanceWebhookEvent(body, TEST_SECRETS.balanceWebhook, nowS()))).status).toBe(202);
    expect(app.balanceEventsQueue.sent.map((m) => m.id)).toEqual(['evt_send_fails']);
  });

  it('lets a redelivery take over a claim whose delivery died before enqueueing (lease expired)', async () => {
    const body = event({ event_id: 'evt_crashed' });
    // A delivery that claimed and died: its row stays processing until the lease ends.
    await app.deps.balanceEventClaims.claim('evt_crashed', app.clock.now().getTime(), 60_000);
    const during = await call.raw(balanceWebhookEvent(body, TEST_SECRETS.balanceWebhook, nowS()));
    expect(during.status).toBe(409);
    expect(during.body.error.code).toBe('event_in_progress');
    app.clock.advance(61_000);
    expect((await call.raw(balanceWebhookEvent(body, TEST_SECRETS.balanceWebhook, nowS()))).status).toBe(202);
    expect(app.balanceEventsQueue.sent.map((m) => m.id)).toEqual(['evt_crashed']);
  });

  it('keeps balance and Stripe claims apart: the same id in each is two events', async () => {
    await app.deps.stripeEvents.recordProcessed('evt_shared_id', 'customer.created', app.clock.now().getTime());
    expect((await call.raw(balanceWebhookEvent(event({ event_id: 'evt_shared_id' }), TEST_SECRETS.balanceWebhook, nowS()))).status).toBe(202);
  });
});
