import { balanceEventSchema } from '../../domain/balance-events.js';
import { HttpError, json, parseJsonBody, rawBody, header, type HttpResult } from '../shared/http.js';
import { verifySignedPayload } from '../shared/signature.js';
import type { RouteContext } from './router.js';

/** POST /webhooks/balance (DESIGN 8): verify the signature, validate, enqueue for the webhook-balance-worker. */

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
