import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createBalanceWebhookHandler } from '../../src/handlers/balance-webhook.js';
import { createApiHandler } from '../../src/handlers/api.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createMembershipsConsumerHandler } from '../../src/handlers/memberships-consumer.js';
import { signPayload } from '../../src/handlers/shared/signature.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { createBalanceWorkerHandler } from '../../src/handlers/webhook-balance-worker.js';
import { LocalGateway } from '../../src/local/gateway.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { kinesisEvent, kinesisRecord, lambdaContext, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { httpEvent, operatorAuth, responseOf } from '../support/http-events.js';
import { completedCheckoutSession, stripeEventOf } from '../support/stripe-fixtures.js';
import { countWrites, type WriteCounter } from '../support/write-counter.js';
import { webhookEvent } from './webhook-events.js';
import { DAY } from '../support/time.js';

/**
 * DESIGN 8: one id schema at every entry point. Identity providers' ids (`auth0|…`,
 * `google-oauth2|…`) and any 256-character printable id go in through the memberships stream, the
 * balance webhook and its worker, the ACH webhook, Stripe's checkout.session.completed and manual
 * pay, and come back out through `GET /v1/users/{userId}/subscriptions`, on DynamoDB Local through
 * the real handlers. Ids the schema refuses are refused everywhere, and nothing is written.
 */

const NOW = '2026-12-01T12:00:00.000Z';
const at = (offsetMs: number) => formatInstant(new Date(Date.parse(NOW) + offsetMs));
const wallSeconds = () => Math.floor(Date.now() / 1000);

const AUTH0 = 'auth0|5f7c8ec7c33c6c004bbafe82';
const GOOGLE = 'google-oauth2|104398237462918374651';
// 256 code points: punctuation API Gateway passes through, a percent sign, accents, CJK and an emoji.
const LONG = (() => {
  const head = "samlp|okta|jürgen.o'brien+billing@例え.jp:~!$%&*()=[]{};,<>^`\"'😀";
  return head + 'x'.repeat(256 - [...head].length);
})();

interface Harness {
  readonly app: TestApp;
  readonly api: ReturnType<typeof createApiHandler>;
  readonly balanceWebhook: ReturnType<typeof createBalanceWebhookHandler>;
  readonly gateway: LocalGateway;
}

async function harness(label: string): Promise<Harness> {
  const app = await createTestApp({ label, now: NOW });
  const api = createApiHandler(app.depsFor('api'));
  const balanceWebhook = createBalanceWebhookHandler(app.depsFor('balance-webhook'));
  const gateway = new LocalGateway({ apiToken: 'local-token', operatorSub: 'local-operator', logger: app.deps.logger, control: async () => undefined, handlers: { api, 'balance-webhook': balanceWebhook } });
  return { app, api, balanceWebhook, gateway };
}

// A user's chain opens once: by a membership NEW or by a Stripe checkout, not both. So the ACH
// journey (stream, balance webhook, ACH) and the card journey (Stripe, manual pay) of the same id
// run on two sets of tables.
let ach: Harness;
let card: Harness;
// The refusal tests run on the ACH tables.
let app: TestApp;
let api: ReturnType<typeof createApiHandler>;
let writes: WriteCounter;

beforeAll(async () => {
  [ach, card] = await Promise.all([harness('ids-ach'), harness('ids-card')]);
  ({ app, api } = ach);
  writes = countWrites(app.db.client, app.db.tables.locks);
});

beforeEach(() => {
  for (const { app } of [ach, card]) {
    app.clock.set(NOW);
    app.simulator.configure({ default: 'approve' });
    app.balanceEventsQueue.clear();
  }
});

const membershipNew = (userId: string, eventId: string, firstBillingDate = at(-2 * DAY)) => ({
  event_id: eventId,
  type: 'NEW',
  user_id: userId,
  occurred_at: at(-3 * DAY),
  plan: { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: 'ach', account_last_four: '6789', first_billing_date: firstBillingDate },
});

const balanceBody = (userId: string, eventId: string) =>
  JSON.stringify({ event_id: eventId, user_id: userId, institution_id: 'ins_1', available_balance_cents: 120_000, current_balance_cents: 125_000, occurred_at: at(-60_000) });

function signedBalance(raw: string) {
  return webhookEvent('/webhooks/balance', raw, { 'X-Balance-Signature': signPayload(raw, TEST_SECRETS.balanceWebhook, wallSeconds()) });
}

function signedAch(raw: string) {
  return webhookEvent('/webhooks/ach', raw, { 'X-ACH-Signature': signPayload(raw, TEST_SECRETS.achWebhook, wallSeconds()) });
}

function signedStripe(event: Record<string, unknown>) {
  const payload = JSON.stringify(event);
  return webhookEvent('/webhooks/stripe', payload, { 'Stripe-Signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: TEST_SECRETS.stripeWebhook }) });
}

/** `GET /v1/users/{userId}/subscriptions` as API Gateway v2 delivers it: path and pathParameters URL-decoded. */
async function subscriptionsViaApiGateway({ api }: Harness, userId: string) {
  const event = httpEvent('GET', {
    route: '/v1/users/{userId}/subscriptions',
    pathParameters: { userId },
    path: `/v1/users/${userId}/subscriptions`,
    query: { limit: '100' },
    auth: operatorAuth,
  });
  return responseOf(await api(event));
}

/** The same request through the local gateway, URL-encoded on the wire as a client sends it. */
async function subscriptionsViaLocalGateway({ gateway }: Harness, userId: string) {
  const answer = await gateway.dispatch({
    method: 'GET',
    url: `/v1/users/${encodeURIComponent(userId)}/subscriptions?limit=100`,
    headers: { authorization: 'Bearer local-token' },
    body: '',
  });
  return { status: answer.status, body: JSON.parse(answer.body) as { items: Record<string, unknown>[] } };
}

describe('one id schema end to end (DESIGN 8)', () => {
  it.each([
    ['auth0', AUTH0],
    ['google-oauth2', GOOGLE],
    ['256 characters', LONG],
  ])('%s: in through the stream, the balance webhook, ACH, Stripe and manual pay; out through the API', async (_what, userId) => {
    expect([...userId].length).toBeLessThanOrEqual(256);
    const tag = randomUUID();
    const { app, balanceWebhook } = ach;
    // 1. Kinesis NEW: the first (due) ACH period.
    const consumed = await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(kinesisEvent([kinesisRecord(membershipNew(userId, `evt-new-${tag}`))]), lambdaContext());
    expect(consumed.batchItemFailures).toEqual([]);
    const [first] = (await app.deps.billing.listByUser(userId)).items;
    expect(first).toMatchObject({ user_id: userId, billing_date: at(-2 * DAY), payment_method: 'ach' });

    // 2. Balance webhook → queue → webhook-balance-worker: the ACH debit is submitted.
    const balance = await balanceWebhook(signedBalance(balanceBody(userId, `bal-${tag}`)));
    expect(balance.statusCode, balance.body).toBe(202);
    expect(app.balanceEventsQueue.sent).toHaveLength(1);
    const message = app.balanceEventsQueue.sent[0]!;
    const worked = await createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent([sqsRecord(message.body, { messageId: message.id, queue: 'test-balance-events' })]), lambdaContext());
    expect(worked.batchItemFailures).toEqual([]);
    const sent = await app.deps.billing.get(first!);
    expect(sent).toMatchObject({ billing_status: 'ACHSENT', user_id: userId });

    // 3. ACH webhook: the bank settles it.
    const settled = await createAchHandler(app.depsFor('ach-handler'))(
      signedAch(
        JSON.stringify({
          event_id: `ach-${tag}`,
          type: 'settled',
          confirmation_id: sent!.transaction_id,
          amount_cents: sent!.amount_cents,
          occurred_at: NOW,
          reference: { kind: 'subscription', user_id: userId, billing_date: sent!.billing_date },
        }),
      ),
    );
    expect(settled.statusCode, settled.body).toBe(200);
    expect(JSON.parse(settled.body!)).toMatchObject({ status: 'applied' });
    expect(await app.deps.billing.get(first!)).toMatchObject({ billing_status: 'COMPLETED' });

    // 4. Stripe checkout.session.completed (Stripe's own example session): the card journey's first period.
    const checkout = await createStripeWebhookHandler(card.app.depsFor('stripe-webhook'))(
      signedStripe(stripeEventOf('checkout.session.completed', completedCheckoutSession({ userId, amountCents: 2999, firstBillingDate: at(-DAY) }), Date.now())),
    );
    expect(checkout.statusCode, checkout.body).toBe(200);
    expect(JSON.parse(checkout.body!)).toMatchObject({ status: 'processed', outcome: 'applied' });
    const opened = await card.app.deps.billing.get({ user_id: userId, billing_date: at(-DAY) });
    expect(opened).toMatchObject({ user_id: userId, payment_method: 'card', amount_cents: 2999, billing_status: 'PENDING' });

    // 5. Manual pay of the card period.
    const paid = responseOf(
      await card.api(
        httpEvent('POST', {
          route: '/v1/subscriptions/{subscriptionId}/pay',
          pathParameters: { subscriptionId: opened!.subscription_id },
          headers: { 'idempotency-key': `pay-${opened!.subscription_id}` },
          auth: operatorAuth,
        }),
      ),
    );
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body).toMatchObject({ outcome: 'collected', subscription: { user_id: userId, billing_status: 'COMPLETED' } });

    // 6. Back out, as API Gateway delivers the request and through the local gateway.
    for (const read of [subscriptionsViaApiGateway, subscriptionsViaLocalGateway]) {
      for (const [journey, billingDate, rail] of [[ach, at(-2 * DAY), 'ach'], [card, at(-DAY), 'card']] as const) {
        const listed = await read(journey, userId);
        expect(listed.status, JSON.stringify(listed.body)).toBe(200);
        const items = listed.body.items as Record<string, unknown>[];
        expect(items.length).toBeGreaterThan(0);
        expect(items.every((item) => item.user_id === userId)).toBe(true);
        expect(items.find((item) => item.billing_date === billingDate)).toMatchObject({ billing_status: 'COMPLETED', payment_method: rail });
      }
    }
  });

  it('loan payments: 256 characters of any script round-trip in the path; 256 emoji (over 768 bytes) are a 400, never a 500', async () => {
    const loanPath = (userId: string, loanId: string) => ({ route: '/v1/users/{userId}/loans/{loanId}/payments', pathParameters: { userId, loanId }, auth: operatorAuth });
    const cjk = '日'.repeat(256);
    const created = responseOf(
      await api(httpEvent('POST', { ...loanPath(AUTH0, cjk), headers: { 'idempotency-key': 'loan-ids-1' }, body: { amount_cents: 1000, payment_method: 'ach' } })),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ loc_user_id: AUTH0, loc_loan_id: cjk });
    const listed = responseOf(await api(httpEvent('GET', loanPath(AUTH0, cjk))));
    expect(listed.status).toBe(200);
    expect(listed.body.items).toHaveLength(1);

    const emoji = '😀'.repeat(256);
    writes.reset();
    for (const [userId, loanId] of [[AUTH0, emoji], [emoji, 'loan-1']] as const) {
      const refused = responseOf(await api(httpEvent('POST', { ...loanPath(userId, loanId), headers: { 'idempotency-key': 'loan-ids-2' }, body: { amount_cents: 1000, payment_method: 'ach' } })));
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(responseOf(await api(httpEvent('GET', loanPath(userId, loanId)))).status).toBe(400);
    }
    expect(writes.data()).toBe(0);
  });

  const REFUSED: readonly (readonly [string, string])[] = [
    ['257 characters', 'x'.repeat(257)],
    ['a slash', 'auth0/5f7c8ec7c33c6c004bbafe82'],
    ['a hash', 'auth0#5f7c8ec7c33c6c004bbafe82'],
    ['a space', 'auth0 5f7c8ec7c33c6c004bbafe82'],
    ['a control character', 'auth0\u00075f7c8ec7c33c6c004bbafe82'],
    ['nothing', ''],
  ];

  it.each(REFUSED)('an id with %s is refused at every entry point and nothing is written', async (_what, userId) => {
    writes.reset();
    // Kinesis NEW → batch item failure.
    const record = kinesisRecord(membershipNew(userId, 'evt-refused'), { partitionKey: 'refused' });
    const consumed = await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(kinesisEvent([record]), lambdaContext());
    expect(consumed.batchItemFailures).toEqual([{ itemIdentifier: record.kinesis.sequenceNumber }]);

    // Balance webhook → 400, nothing enqueued; the worker refuses such a message as a batch item failure.
    const balance = await createBalanceWebhookHandler(app.depsFor('balance-webhook'))(signedBalance(balanceBody(userId, 'bal-refused')));
    expect(balance.statusCode).toBe(400);
    expect(app.balanceEventsQueue.sent).toEqual([]);
    const badMessage = sqsRecord(balanceBody(userId, 'bal-refused'), { queue: 'test-balance-events' });
    expect((await createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent([badMessage]), lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: badMessage.messageId }]);

    // A collections message naming it → batch item failure.
    const collection = sqsRecord({ user_id: userId, billing_date: at(-DAY), subscription_id: 'sub-1', process: 'SCHEDULED', enqueued_at: NOW });
    expect((await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([collection]), lambdaContext())).batchItemFailures).toEqual([{ itemIdentifier: collection.messageId }]);

    // ACH → 400.
    const ach = await createAchHandler(app.depsFor('ach-handler'))(
      signedAch(JSON.stringify({ event_id: 'ach-refused', type: 'settled', confirmation_id: 'conf-1', amount_cents: 1999, occurred_at: NOW, reference: { kind: 'subscription', user_id: userId, billing_date: at(-DAY) } })),
    );
    expect(ach.statusCode).toBe(400);

    // The API: manual pay, reads and loan payments with it in the path → 400.
    for (const event of [
      httpEvent('POST', { route: '/v1/subscriptions/{subscriptionId}/pay', pathParameters: { subscriptionId: userId }, headers: { 'idempotency-key': 'k-refused' }, auth: operatorAuth }),
      httpEvent('GET', { route: '/v1/users/{userId}/subscriptions', pathParameters: { userId }, path: `/v1/users/${userId}/subscriptions`, auth: operatorAuth }),
      httpEvent('POST', {
        route: '/v1/users/{userId}/loans/{loanId}/payments',
        pathParameters: { userId, loanId: 'loan-1' },
        headers: { 'idempotency-key': 'k-refused' },
        body: { amount_cents: 1000, payment_method: 'ach' },
        auth: operatorAuth,
      }),
    ]) {
      const answer = responseOf(await api(event));
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    }

    // Nothing was written to any data table, and nothing was charged.
    expect(writes.data()).toBe(0);
    expect(app.simulator.charges().filter((c) => c.user_id === userId)).toEqual([]);

    // Stripe checkout → 200 ignored (invalid data: a redelivery could not fix it). Only the event's
    // processed mark is written (so Stripe stops redelivering), no billing record.
    const checkout = await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(
      signedStripe(stripeEventOf('checkout.session.completed', completedCheckoutSession({ userId, amountCents: 1999, firstBillingDate: at(-DAY) }), Date.now())),
    );
    expect(checkout.statusCode).toBe(200);
    expect(JSON.parse(checkout.body!)).toMatchObject({ outcome: 'ignored', reason: 'invalid_data' });
    if (userId !== '') expect((await app.deps.billing.listByUser(userId)).items).toEqual([]);
  });
});
