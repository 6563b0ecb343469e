import { attemptDepsOf } from '../shared/attempt-deps.js';
import { actedBy } from '../../domain/actors.js';
import * as z from '../../domain/zod.js';
import { lazySchema } from '../../domain/lazy-schema.js';
import type { AttemptOutcome } from '../../domain/use-cases/collect.js';
import type { UseCaseDeps } from '../../domain/use-cases/deps.js';
import { LockedError } from '../../domain/errors.js';
import { billingFailureView } from '../../domain/ladder.js';
import { changeBillingDate } from '../../domain/use-cases/change-billing-date.js';
import { manualPay } from '../../domain/use-cases/manual-pay.js';
import { retryBilling } from '../../domain/use-cases/retry-billing.js';
import { waive } from '../../domain/use-cases/waive.js';
import type { BillingRecord } from '../../domain/records.js';
import { instantSchema } from '../../domain/time.js';
import { json, parseJsonBody, type HttpResult } from '../shared/http.js';
import { serializeSubscription } from '../shared/serialize.js';
import { idSchema, idempotencyKey, pathParams, reasonSchema } from './request.js';
import type { RouteContext } from './router.js';
import { findSubscription } from './subscriptions.js';

/** Manual pay, operator retry-billing, waive and due-date change (DESIGN 5 and 8), all audited. */

export const subscriptionParams = lazySchema(() => z.object({ subscriptionId: idSchema }));
export const optionalReasonBody = lazySchema(() => z.optional(z.strictObject({ reason: z.optional(reasonSchema) })));
export const waiveBody = lazySchema(() => z.strictObject({ reason: reasonSchema }));
export const billingDateBody = lazySchema(() => z.strictObject({ billing_date: instantSchema, reason: z.optional(reasonSchema) }));

/** The use case's deps for one request: every audit row it writes names the caller. */
export function attemptDeps(ctx: RouteContext): UseCaseDeps {
  const deps = attemptDepsOf(ctx.deps, ctx.log);
  return ctx.actor === undefined ? deps : { ...deps, billing: actedBy(deps.billing, ctx.actor) };
}

function subscriptionId(ctx: RouteContext): string {
  const { subscriptionId: id } = pathParams(ctx.params, subscriptionParams);
  ctx.annotate({ subscription_id: id });
  return id;
}

/**
 * What a manual pay did, as the API names it:
 * - `collected`: a pinless or card payment was approved;
 * - `submitted`: an ACH debit was accepted, settlement follows (status ACHSENT);
 * - `declined`: the bank said no (status FAILED, `payment_error` says why);
 * - `failed`: a system failure, not a decline; `billing_failure` is present when it was saved;
 * - `not_due`: nothing to collect now (`not_due_reason`: status, not_yet_due, gate_closed, ...);
 * - `cancelled`: a requested cancel took effect instead of a collection;
 * - `inactive`: the account is not active, the period became INACTIVE;
 * - `paused`: a paused period whose window had passed was skipped.
 * A hold (DESIGN 3.1) is not an outcome: it answers 409 with its code (ach_authorization_required, ...).
 */
export type PayOutcome = 'collected' | 'submitted' | 'declined' | 'failed' | 'not_due' | 'cancelled' | 'inactive' | 'paused';

function payOutcome(outcome: AttemptOutcome): { outcome: PayOutcome; not_due_reason?: string } {
  switch (outcome.kind) {
    case 'collected':
    case 'submitted':
    case 'declined':
    case 'cancelled':
    case 'inactive':
      return { outcome: outcome.kind };
    case 'pause_advanced':
      return { outcome: 'paused' };
    case 'failed_counted':
    case 'failed_uncounted':
      return { outcome: 'failed' };
    case 'not_due':
      return { outcome: 'not_due', not_due_reason: outcome.reason };
    case 'gate_closed':
      return { outcome: 'not_due', not_due_reason: 'gate_closed' };
    case 'held':
      return { outcome: 'not_due', not_due_reason: outcome.refusal.code };
    case 'skipped_locked':
      // Someone else is billing this user right now: nothing happened, try again shortly.
      throw new LockedError('the subscription is being billed right now');
  }
}

/** A replay answers what the first request did, as the record now shows it. */
function replayOutcome(record: BillingRecord): PayOutcome {
  switch (record.billing_status) {
    case 'COMPLETED':
    case 'REFUNDED':
      return 'collected';
    case 'ACHSENT':
      return 'submitted';
    case 'FAILED':
      return 'declined';
    default:
      return billingFailureView(record) ? 'failed' : 'not_due';
  }
}

export async function pay(ctx: RouteContext): Promise<HttpResult> {
  // A member's ownership first: one read before the lock and the Idempotency-Key lookup.
  if (ctx.caller?.kind === 'member') await findSubscription(ctx);
  const id = subscriptionId(ctx);
  const key = idempotencyKey(ctx.event);
  const body = parseJsonBody(ctx.event, optionalReasonBody);
  const result = await manualPay(attemptDeps(ctx), {
    subscriptionId: id,
    owner: ctx.owner,
    actor: ctx.actor,
    reason: body?.reason,
    idempotencyKey: key,
  });
  ctx.annotate({ user_id: result.subscription.user_id });
  const described = result.replayed ? { outcome: replayOutcome(result.subscription) } : payOutcome(result.outcome);
  const failure = billingFailureView(result.subscription);
  return json(200, {
    ...described,
    replayed: result.replayed,
    ...(described.outcome === 'failed' && failure ? { billing_failure: failure } : {}),
    subscription: serializeSubscription(result.subscription, ctx.deps.clock.now()),
  });
}

export async function retryBillingRoute(ctx: RouteContext): Promise<HttpResult> {
  const id = subscriptionId(ctx);
  const body = parseJsonBody(ctx.event, optionalReasonBody);
  const result = await retryBilling(attemptDeps(ctx), { subscriptionId: id, owner: ctx.owner, actor: ctx.actor, reason: body?.reason });
  ctx.annotate({ user_id: result.subscription.user_id });
  return json(200, {
    outcome: result.outcome,
    ...(result.billing_failure ? { billing_failure: result.billing_failure } : {}),
    still_due: result.still_due,
    subscription: serializeSubscription(result.subscription, ctx.deps.clock.now()),
  });
}

export async function waiveRoute(ctx: RouteContext): Promise<HttpResult> {
  const id = subscriptionId(ctx);
  const body = parseJsonBody(ctx.event, waiveBody);
  const after = await waive(attemptDeps(ctx), { subscriptionId: id, owner: ctx.owner, actor: ctx.actor, reason: body.reason });
  ctx.annotate({ user_id: after.user_id });
  return json(200, { subscription: serializeSubscription(after, ctx.deps.clock.now()) });
}

export async function changeBillingDateRoute(ctx: RouteContext): Promise<HttpResult> {
  const id = subscriptionId(ctx);
  const body = parseJsonBody(ctx.event, billingDateBody);
  const moved = await changeBillingDate(attemptDeps(ctx), {
    subscriptionId: id,
    owner: ctx.owner,
    actor: ctx.actor,
    reason: body.reason,
    billingDate: body.billing_date,
  });
  ctx.annotate({ user_id: moved.user_id });
  return json(200, { subscription: serializeSubscription(moved, ctx.deps.clock.now()) });
}
