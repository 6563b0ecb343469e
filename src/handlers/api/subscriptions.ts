import * as z from 'zod';
import { NotFoundError } from '../../domain/errors.js';
import { failureState } from '../../domain/ladder.js';
import type { Page } from '../../domain/ports.js';
import type { BillingRecord } from '../../domain/records.js';
import type { AppDeps } from '../../runtime/deps.js';
import { json, type HttpResult } from '../shared/http.js';
import { serializeHistoryRow, serializePage, serializeSubscription } from '../shared/serialize.js';
import { cursorSchema, idSchema, limitSchema, pageQuerySchema, pathParams, queryParams } from './request.js';
import type { RouteContext } from './router.js';

/** Subscription reads (DESIGN 8): by user, by id, its history, the live billing failures and the exceptions. */

export const userParams = z.object({ userId: idSchema });
export const subscriptionParams = z.object({ subscriptionId: idSchema });

export async function listUserSubscriptions(ctx: RouteContext): Promise<HttpResult> {
  const { userId } = pathParams(ctx.params, userParams);
  ctx.annotate({ user_id: userId });
  const query = queryParams(ctx.event, pageQuerySchema);
  const page = await ctx.deps.billing.listByUser(userId, { limit: query.limit, cursor: query.next ?? null });
  const now = ctx.deps.clock.now();
  return json(200, serializePage(page, (r) => serializeSubscription(r, now)));
}

/** The subscription by id, or NotFoundError (404). */
export async function findSubscription(ctx: RouteContext): Promise<BillingRecord> {
  const { subscriptionId } = pathParams(ctx.params, subscriptionParams);
  ctx.annotate({ subscription_id: subscriptionId });
  const record = await ctx.deps.billing.findBySubscriptionId(subscriptionId);
  if (!record) throw new NotFoundError(`subscription ${subscriptionId} not found`);
  ctx.annotate({ user_id: record.user_id });
  return record;
}

export async function getSubscription(ctx: RouteContext): Promise<HttpResult> {
  const record = await findSubscription(ctx);
  return json(200, serializeSubscription(record, ctx.deps.clock.now()));
}

export async function getSubscriptionHistory(ctx: RouteContext): Promise<HttpResult> {
  const query = queryParams(ctx.event, pageQuerySchema);
  const record = await findSubscription(ctx);
  const page = await ctx.deps.billing.history(record.subscription_id, { limit: query.limit, cursor: query.next ?? null });
  return json(200, serializePage(page, serializeHistoryRow));
}

/* ---------------- GET /v1/subscriptions?billing=failing[&state=retrying|parked] | ?billing=exceptions ---------------- */

export const subscriptionsQuerySchema = z
  .strictObject({
    billing: z.enum(['failing', 'exceptions']).describe('failing: live billing failures (DESIGN 5); exceptions: outcomes that did not match (DESIGN 4.1, 6.1)'),
    state: z.enum(['retrying', 'parked']).optional().describe('failing only'),
    limit: limitSchema,
    next: cursorSchema.optional(),
  })
  .superRefine((query, ctx) => {
    if (query.billing === 'exceptions' && query.state !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['state'], message: 'state filters the failing list only' });
    }
  });

/** Store pages read per request at most; a page can then hold fewer than `limit` items with `next` set. */
const MAX_READS_PER_PAGE = 5;

/**
 * The sparse failing index holds exactly the records whose failure is live (the index is
 * eventually consistent, so the predicate is checked again); the state filter is applied here.
 */
export async function listFailingSubscriptions(
  deps: Pick<AppDeps, 'billing'>,
  options: { state?: 'retrying' | 'parked' | undefined; limit: number; next?: string | undefined },
): Promise<Page<BillingRecord>> {
  let cursor: string | null = options.next ?? null;
  const items: BillingRecord[] = [];
  for (let reads = 0; reads < MAX_READS_PER_PAGE && items.length < options.limit; reads++) {
    const page = await deps.billing.listFailing({ limit: options.limit - items.length, cursor });
    for (const record of page.items) {
      const state = failureState(record);
      if (state !== 'healthy' && (options.state === undefined || state === options.state)) items.push(record);
    }
    cursor = page.next;
    if (cursor === null) break;
  }
  return { items, next: cursor };
}

/**
 * The exceptions list: records carrying `ach_exception` or `card_exception`. Every primary write is
 * a full put that derives the index keys from the record, so the index holds exactly these records.
 */
export async function listExceptionSubscriptions(
  deps: Pick<AppDeps, 'billing'>,
  options: { limit: number; next?: string | undefined },
): Promise<Page<BillingRecord>> {
  return deps.billing.listExceptions({ limit: options.limit, cursor: options.next ?? null });
}

export async function listSubscriptions(ctx: RouteContext): Promise<HttpResult> {
  const query = queryParams(ctx.event, subscriptionsQuerySchema);
  const page =
    query.billing === 'exceptions'
      ? await listExceptionSubscriptions(ctx.deps, { limit: query.limit, next: query.next })
      : await listFailingSubscriptions(ctx.deps, { state: query.state, limit: query.limit, next: query.next });
  const now = ctx.deps.clock.now();
  return json(200, serializePage(page, (r) => serializeSubscription(r, now)));
}
