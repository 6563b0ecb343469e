import * as z from 'zod';
import { instantSchema } from '../../domain/time.js';
import { HttpError, json, parseJsonBody, rawBody, header, type HttpResult } from '../shared/http.js';
import { verifySignedPayload } from '../shared/signature.js';
import { idSchema } from './request.js';
import type { RouteContext } from './router.js';

/** POST /webhooks/balance (DESIGN 8): verify the signature, validate, enqueue for the webhook-balance-worker. */

const balanceCents = z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);

export const balanceEventSchema = z.object({
  // The queue message id and the worker's dedup key: an id, not free text.
  event_id: idSchema,
  user_id: idSchema,
  institution_id: z.string().min(1).max(128),
  available_balance_cents: balanceCents,
  current_balance_cents: balanceCents,
  calc_available_balance_cents: balanceCents.optional(),
  occurred_at: instantSchema,
});
export type BalanceEvent = z.infer<typeof balanceEventSchema>;

export async function receiveBalanceEvent(ctx: RouteContext): Promise<HttpResult> {
  const { event, deps } = ctx;
  // Nothing is read from the body until the signature over its raw bytes checks out.
  const verdict = verifySignedPayload(header(event, 'x-balance-signature'), rawBody(event), deps.secrets.balanceWebhook, deps.wallClock.now().getTime());
  if (!verdict.ok) throw new HttpError(400, 'invalid_signature', `the X-Balance-Signature header is ${verdict.reason === 'stale' ? 'too old' : verdict.reason === 'missing' ? 'missing' : 'invalid'}`);
  const balance = parseJsonBody(event, balanceEventSchema);
  ctx.annotate({ user_id: balance.user_id });
  await deps.balanceEventsQueue.sendBatch([{ id: balance.event_id, body: JSON.stringify(balance) }]);
  ctx.log.info({ event_id: balance.event_id }, 'balance event enqueued');
  return json(202, { accepted: true });
}
