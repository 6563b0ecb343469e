import * as z from '../../domain/zod.js';
import { lazySchema } from '../../domain/lazy-schema.js';
import { resolvePeriodException } from '../../domain/use-cases/resolve-exception.js';
import { json, parseJsonBody, type HttpResult } from '../shared/http.js';
import { serializeSubscription } from '../shared/serialize.js';
import { idSchema, pathParams, reasonSchema } from './request.js';
import type { RouteContext } from './router.js';
import { attemptDeps, subscriptionParams } from './subscription-actions.js';

/** `POST /v1/subscriptions/{subscriptionId}/exception/resolve` (DESIGN 12): an operator closes an exception, audited. */
export const resolveExceptionBody = lazySchema(() => z.discriminatedUnion('resolution', [
  z.strictObject({
    resolution: z.enum(['accept', 'waive']).check(z.describe('accept: the money received settles the period; waive: written off, the money received stays recorded')),
    reason: reasonSchema,
  }),
  z.strictObject({
    resolution: z.literal('refunded_retry').check(z.describe('the money received went back: the period is owed in full again')),
    reason: reasonSchema,
    refund_id: idSchema.check(z.describe("the processor's id of the full refund of the money received")),
  }),
]));

export async function resolveExceptionRoute(ctx: RouteContext): Promise<HttpResult> {
  const { subscriptionId } = pathParams(ctx.params, subscriptionParams);
  ctx.annotate({ subscription_id: subscriptionId });
  const body = parseJsonBody(ctx.event, resolveExceptionBody);
  const after = await resolvePeriodException(attemptDeps(ctx), { subscriptionId, owner: ctx.owner, actor: ctx.actor, ...body });
  ctx.annotate({ user_id: after.user_id });
  return json(200, { resolution: body.resolution, subscription: serializeSubscription(after, ctx.deps.clock.now()) });
}
