import * as z from '../domain/zod.js';
import { DETAIL_SCHEMAS, DETAIL_TYPES, EVENT_SOURCE, type DetailType } from '../domain/published-events.js';

type JsonObject = Record<string, unknown>;

/** What a consumer of the billing bus must know to order what it receives (DESIGN 11). */
export const EVENT_ORDERING =
  'EventBridge keeps no order. Every event about a period carries `sequence` (the period record\'s version after the change) and `ordinal` ' +
  '(its place among the events of one audit row): order one subscription_id\'s events by (sequence, ordinal) and drop one that is not after ' +
  'the last you applied (stale, or a redelivery; deduplicate on event_id). Gaps are normal. Across the periods of a chain, order by occurred_at. ' +
  'billing.instrument.held carries no sequence: its since and event_id order it.';

/**
 * The events the billing bus carries, as OpenAPI 3.1 `webhooks` (what we send, not what we serve):
 * one entry per detail-type, its envelope's schema from the same zod schema the publisher validates with.
 */
export function publishedEventWebhooks(toJsonSchema: (schema: z.ZodMiniType) => JsonObject): JsonObject {
  return Object.fromEntries(
    DETAIL_TYPES.map((type: DetailType) => [
      type,
      {
        post: {
          summary: `${type} on the billing-<stage> EventBridge bus (source "${EVENT_SOURCE}")`,
          description: EVENT_ORDERING,
          tags: ['events'],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: toJsonSchema(z.object({ source: z.literal(EVENT_SOURCE), 'detail-type': z.literal(type), detail: DETAIL_SCHEMAS[type] })) } },
          },
          responses: { '200': { description: 'Delivered to the rule\'s target' } },
        },
      },
    ]),
  );
}
