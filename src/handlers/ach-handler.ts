import { achEventSchema } from '../domain/ach-outcomes.js';
import { actedBy, eventActor } from '../domain/actors.js';
import { applyAchEvent } from '../domain/use-cases/apply-ach-outcome.js';
import { processStripeEventOnce } from '../domain/stripe-events.js';
import type { AppDeps } from '../runtime/deps.js';
import { errorBody, errorResponse, header, json, parseJsonBody, rawBody, type HttpEvent, type HttpResult } from './shared/http.js';
import { verifySignedPayload } from './shared/signature.js';

/**
 * `POST /webhooks/ach` (DESIGN 4): HMAC-signed settlement, return, refund and chargeback outcomes,
 * the signature checked before the body is parsed; no lock, the record's version is the fence.
 * 200 for all the sender must not repeat (it retries any non-2xx forever, so an unknown reference
 * is logged, not refused; a replayed event id answers `duplicate`), 400 for a bad signature or body,
 * 409 when the record kept changing or another delivery of the event is being applied.
 */
export function createAchHandler(deps: AppDeps): (event: HttpEvent) => Promise<HttpResult> {
  return async (event) => {
    const log = deps.logger.child({ handler: 'ach-handler', request_id: event.requestContext?.requestId });
    try {
      const body = rawBody(event);
      const verdict = verifySignedPayload(header(event, 'x-ach-signature'), body, deps.secrets.achWebhook, deps.wallClock.now().getTime());
      if (!verdict.ok) {
        log.warn({ reason: verdict.reason }, 'ach webhook signature rejected');
        return json(400, errorBody('invalid_signature', 'the X-ACH-Signature header is missing, malformed, stale or does not match'));
      }
      const achEvent = parseJsonBody(event, achEventSchema);
      const ref = achEvent.reference;
      const eventLog = log.child({
        event_id: achEvent.event_id,
        type: achEvent.type,
        user_id: ref.user_id,
        reference_kind: ref.kind,
        ...(ref.kind === 'subscription' ? { billing_date: ref.billing_date } : { loan_id: ref.loan_id, payment_id: ref.payment_id }),
        ...(achEvent.return_code ? { return_code: achEvent.return_code } : {}),
      });
      // Claimed by id (DESIGN 15): a replay of a settled event is answered without effect; an outcome not yet recorded releases its claim.
      const delivery = await processStripeEventOnce(
        { clock: deps.clock, stripeEvents: deps.achEventClaims },
        { id: achEvent.event_id, type: achEvent.type },
        () => applyAchEvent({ ...deps, billing: actedBy(deps.billing, eventActor('ach', achEvent.event_id)) }, achEvent),
        { settles: (applied) => applied.kind !== 'not_yet_recorded', onReleaseError: (error) => eventLog.error({ err: error }, 'ach event claim could not be released') },
      );
      if (delivery.kind === 'duplicate') {
        eventLog.info('ach event already processed');
        return json(200, { status: 'duplicate' });
      }
      if (delivery.kind === 'in_progress') return json(409, errorBody('event_in_progress', 'another delivery of this event is being processed; retry later'));
      const result = delivery.result;
      if (result.kind === 'ignored') {
        const level = result.reason === 'already_applied' ? 'info' : 'warn';
        eventLog[level]({ reason: result.reason, status: result.status }, 'ach outcome ignored');
        return json(200, { status: 'ignored', reason: result.reason });
      }
      if (result.kind === 'not_yet_recorded') {
        // The attempt that made this debit has not recorded it yet: deliver again after its repair (DESIGN 4.1).
        eventLog.warn({ status: result.status }, 'ach outcome for a submission not yet recorded');
        return json(409, { error: { code: 'not_yet_recorded', message: 'the submission this outcome is for is not recorded yet; deliver it again later' } });
      }
      if (result.amount_mismatch) eventLog.warn({ amount_cents: achEvent.amount_cents, effect: result.effect }, 'ach outcome amount differs from the record');
      const level = result.reversed || result.effect === 'exception' ? 'warn' : 'info';
      eventLog[level]({ effect: result.effect, status: result.status, reversed: result.reversed }, 'ach outcome applied');
      return json(200, { status: 'applied', effect: result.effect, record_status: result.status, ...(result.reversed ? { reversed: true } : {}) });
    } catch (error) {
      return errorResponse(error, log);
    }
  };
}

