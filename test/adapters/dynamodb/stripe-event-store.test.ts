import { randomUUID } from 'node:crypto';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoStripeEventStore, STRIPE_EVENT_RETENTION_SECONDS } from '../../../src/adapters/dynamodb/stripe-event-store.js';
import { createTestDynamo, type TestDynamo } from '../../support/dynamo.js';
import { STRIPE_EVENT_LEASE_MS } from '../../support/time.js';
import { commandsSent } from '../../support/write-counter.js';

// Real time: DynamoDB Local honours TTL (expires_at), so rows must not be born expired.
const NOW = Date.now();

describe('DynamoStripeEventStore on DynamoDB Local', () => {
  let db: TestDynamo;
  let store: DynamoStripeEventStore;
  beforeAll(async () => {
    db = await createTestDynamo('stripe');
    store = new DynamoStripeEventStore({ client: db.client, tableName: db.tables.stripeEvents });
  });

  const eventId = () => `evt_${randomUUID().replaceAll('-', '')}`;

  async function raw(id: string) {
    return (
      await db.client.send(
        new GetItemCommand({ TableName: db.tables.stripeEvents, Key: { pk: { S: `stripe#${id}` }, sk: { S: 'event' } }, ConsistentRead: true }),
      )
    ).Item;
  }

  it('writes the DESIGN 2.8 row on claim', async () => {
    const id = eventId();
    const result = await store.claim(id, NOW, STRIPE_EVENT_LEASE_MS);
    expect(result.kind).toBe('claimed');
    const item = await raw(id);
    expect(item).toMatchObject({
      pk: { S: `stripe#${id}` },
      sk: { S: 'event' },
      event_id: { S: id },
      status: { S: 'processing' },
      updated_at: { N: String(Math.floor(NOW / 1000)) },
      expires_at: { N: String(Math.floor(NOW / 1000) + STRIPE_EVENT_RETENTION_SECONDS) },
      lease_expires_at: { N: String(NOW + STRIPE_EVENT_LEASE_MS) },
      claim_token: { S: result.kind === 'claimed' ? result.claim_token : '' },
    });
    expect(item?.event_type).toBeUndefined();
  });

  it('lets exactly one of 50 concurrent duplicate deliveries claim; the rest are in progress', async () => {
    const id = eventId();
    const results = await Promise.all(Array.from({ length: 50 }, () => store.claim(id, NOW, STRIPE_EVENT_LEASE_MS)));
    expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'in_progress')).toHaveLength(49);
  });

  it('lets a delivery take over an expired claim, and fences the old claimant off', async () => {
    const id = eventId();
    const first = await store.claim(id, NOW, STRIPE_EVENT_LEASE_MS);
    expect(await store.claim(id, NOW + STRIPE_EVENT_LEASE_MS, STRIPE_EVENT_LEASE_MS)).toEqual({ kind: 'in_progress' });
    const second = await store.claim(id, NOW + STRIPE_EVENT_LEASE_MS + 1, STRIPE_EVENT_LEASE_MS);
    expect(second.kind).toBe('claimed');
    if (first.kind !== 'claimed' || second.kind !== 'claimed') throw new Error('unreachable');
    expect(await store.markProcessed(id, first.claim_token, 'charge.refunded', NOW + STRIPE_EVENT_LEASE_MS + 2)).toBe(false);
    await store.release(id, first.claim_token);
    expect((await store.get(id))?.claim_token).toBe(second.claim_token);
    expect(await store.markProcessed(id, second.claim_token, 'charge.refunded', NOW + STRIPE_EVENT_LEASE_MS + 3)).toBe(true);
  });

  it('marks processed with our token; a processed event blocks every later claim, even after the lease', async () => {
    const id = eventId();
    const claim = await store.claim(id, NOW, STRIPE_EVENT_LEASE_MS);
    if (claim.kind !== 'claimed') throw new Error('not claimed');
    expect(await store.markProcessed(id, claim.claim_token, 'payment_intent.succeeded', NOW + 1_000)).toBe(true);
    const stored = await store.get(id);
    expect(stored).toMatchObject({ status: 'processed', event_type: 'payment_intent.succeeded', updated_at: Math.floor((NOW + 1_000) / 1000) });
    expect(stored?.lease_expires_at).toBeUndefined();
    expect(await store.claim(id, NOW + 10 * STRIPE_EVENT_LEASE_MS, STRIPE_EVENT_LEASE_MS)).toEqual({ kind: 'processed' });
    // A processed row is never released, not even by its own token.
    await store.release(id, claim.claim_token);
    expect((await store.get(id))?.status).toBe('processed');
    expect(await store.markProcessed(id, claim.claim_token, 'x', NOW + 2_000)).toBe(false);
  });

  it('releases only its own claim, so a re-delivery can claim again', async () => {
    const id = eventId();
    const claim = await store.claim(id, NOW, STRIPE_EVENT_LEASE_MS);
    if (claim.kind !== 'claimed') throw new Error('not claimed');
    await store.release(id, 'someone-else');
    expect((await store.get(id))?.status).toBe('processing');
    await store.release(id, claim.claim_token);
    expect(await store.get(id)).toBeUndefined();
    expect((await store.claim(id, NOW + 1, STRIPE_EVENT_LEASE_MS)).kind).toBe('claimed');
  });

  it('takes over a legacy processing row without a lease (seed 003 shape)', async () => {
    const id = eventId();
    await db.client.send(
      new PutItemCommand({
        TableName: db.tables.stripeEvents,
        Item: {
          pk: { S: `stripe#${id}` },
          sk: { S: 'event' },
          event_id: { S: id },
          status: { S: 'processing' },
          updated_at: { N: String(Math.floor(NOW / 1000)) },
          expires_at: { N: String(Math.floor(NOW / 1000) + 3600) },
        },
      }),
    );
    expect((await store.claim(id, NOW, STRIPE_EVENT_LEASE_MS)).kind).toBe('claimed');
  });

  it('answers a refused claim from the row the condition saw: one PutItem, no read after it', async () => {
    const id = eventId();
    const claim = await store.claim(id, NOW, STRIPE_EVENT_LEASE_MS);
    if (claim.kind !== 'claimed') throw new Error('not claimed');
    let answer: unknown;
    expect(await commandsSent(db.client, async () => (answer = await store.claim(id, NOW + 1, STRIPE_EVENT_LEASE_MS)))).toEqual(['PutItemCommand']);
    expect(answer).toEqual({ kind: 'in_progress' });
    await store.markProcessed(id, claim.claim_token, 'charge.refunded', NOW + 2);
    expect(await commandsSent(db.client, async () => (answer = await store.claim(id, NOW + 3, STRIPE_EVENT_LEASE_MS)))).toEqual(['PutItemCommand']);
    expect(answer).toEqual({ kind: 'processed' });
  });

  it('records an event processed in one PutItem: the row a claim and its mark leave, refused as a claim is', async () => {
    const id = eventId();
    let answer: unknown;
    expect(await commandsSent(db.client, async () => (answer = await store.recordProcessed(id, 'customer.created', NOW)))).toEqual(['PutItemCommand']);
    expect(answer).toEqual({ kind: 'recorded' });
    const stored = await store.get(id);
    expect(stored).toMatchObject({ event_id: id, status: 'processed', event_type: 'customer.created', updated_at: Math.floor(NOW / 1000), expires_at: Math.floor(NOW / 1000) + STRIPE_EVENT_RETENTION_SECONDS });
    expect(stored?.lease_expires_at).toBeUndefined();
    // A redelivery, recorded or claimed: the event was processed, in one request.
    expect(await commandsSent(db.client, async () => (answer = await store.recordProcessed(id, 'customer.created', NOW + 10 * STRIPE_EVENT_LEASE_MS)))).toEqual(['PutItemCommand']);
    expect(answer).toEqual({ kind: 'processed' });
    expect(await store.claim(id, NOW + 10 * STRIPE_EVENT_LEASE_MS, STRIPE_EVENT_LEASE_MS)).toEqual({ kind: 'processed' });

    // A live claim of another delivery repels it; once that claim's lease is over, it is overwritten.
    const claimed = eventId();
    const claim = await store.claim(claimed, NOW, STRIPE_EVENT_LEASE_MS);
    if (claim.kind !== 'claimed') throw new Error('not claimed');
    expect(await store.recordProcessed(claimed, 'customer.created', NOW + STRIPE_EVENT_LEASE_MS)).toEqual({ kind: 'in_progress' });
    expect((await store.get(claimed))?.status).toBe('processing');
    expect(await store.recordProcessed(claimed, 'customer.created', NOW + STRIPE_EVENT_LEASE_MS + 1)).toEqual({ kind: 'recorded' });
    expect(await store.markProcessed(claimed, claim.claim_token, 'customer.created', NOW + STRIPE_EVENT_LEASE_MS + 2)).toBe(false);
    expect((await store.get(claimed))?.status).toBe('processed');
  });

  it('lets exactly one of 50 concurrent deliveries record an event; the rest find it processed or in progress, and it is processed', async () => {
    const id = eventId();
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? store.recordProcessed(id, 'customer.created', NOW) : store.claim(id, NOW, STRIPE_EVENT_LEASE_MS))));
    const winners = results.filter((r) => r.kind === 'recorded' || r.kind === 'claimed');
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'processed' || r.kind === 'in_progress')).toHaveLength(49);
    const stored = await store.get(id);
    expect(stored?.status).toBe(winners[0]!.kind === 'recorded' ? 'processed' : 'processing');
  });

  it('answers undefined for an unknown event', async () => {
    expect(await store.get(eventId())).toBeUndefined();
  });
});
