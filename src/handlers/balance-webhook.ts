import { balanceEventSchema } from '../domain/balance-events.js';
import { processStripeEventOnce } from '../domain/stripe-events.js';
import type { AppDeps } from '../runtime/deps.js';
import { errorBody, errorResponse, header, json, parseJsonBody, rawBody, type HttpEvent, type HttpResult } from './shared/http.js';
import { verifySignedPayload } from './shared/signature.js';

/**
 * `POST /webhooks/balance` (DESIGN 8, 15), in a function of its own: verify the signature over the
 * raw body (400), validate, claim the event by id, enqueue it for the webhook-balance-worker (202).
 * A replayed event id answers 200 `duplicate` and enqueues nothing; a failed enqueue releases the
 * claim and answers 5xx, so the sender delivers again.
 */
export function createBalanceWebhookHandler(deps: AppDeps): (event: HttpEvent) => Promise<HttpResult> {
  return async (event) => {
    const log = deps.logger.child({ handler: 'balance-webhook', request_id: event.requestContext?.requestId });
    try {
      // Nothing is read from the body until the signature over its raw bytes checks out.
      const verdict = verifySignedPayload(header(event, 'x-balance-signature'), rawBody(event), deps.secrets.balanceWebhook, deps.wallClock.now().getTime());
      if (!verdict.ok) {
        log.warn({ reason: verdict.reason }, 'balance webhook signature rejected');
        const what = verdict.reason === 'stale' ? 'too old' : verdict.reason === 'missing' ? 'missing' : 'invalid';
        return json(400, errorBody('invalid_signature', `the X-Balance-Signature header is ${what}`));
      }
      const balance = parseJsonBody(event, balanceEventSchema);
      const eventLog = log.child({ event_id: balance.event_id, user_id: balance.user_id });
      const delivery = await processStripeEventOnce(
        { clock: deps.clock, stripeEvents: deps.balanceEventClaims },
        { id: balance.event_id, type: 'balance' },
        () => deps.balanceEventsQueue.sendBatch([{ id: balance.event_id, body: JSON.stringify(balance) }]),
        { onReleaseError: (error) => eventLog.error({ err: error }, 'balance event claim could not be released') },
      );
      if (delivery.kind === 'duplicate') {
        eventLog.info('balance event already enqueued');
        return json(200, { status: 'duplicate' });
      }
      if (delivery.kind === 'in_progress') return json(409, errorBody('event_in_progress', 'another delivery of this event is being processed; retry later'));
      eventLog.info('balance event enqueued');
      return json(202, { accepted: true });
    } catch (error) {
      return errorResponse(error, log);
    }
  };
}
