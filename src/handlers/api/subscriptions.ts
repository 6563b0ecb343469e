import * as z from '../../domain/zod.js';
import { lazySchema } from '../../domain/lazy-schema.js';
import { InvalidPageRequestError } from '../../runtime/stored-items.js';
import { NotFoundError } from '../../domain/errors.js';
import { dunningState, type DunningState } from '../../domain/dunning.js';
import { failureState } from '../../domain/ladder.js';
import type { Page } from '../../domain/ports/page.js';
import type { BillingRecord } from '../../domain/records.js';
import { formatInstant } from '../../domain/time.js';
import type { AppDeps } from '../../runtime/deps.js';
import { json, type HttpResult } from '../shared/http.js';
import { serializeHistoryRow, serializePage, serializeSubscription } from '../shared/serialize.js';
import { cursorSchema, idSchema, limitSchema, pageQuerySchema, pathParams, queryParams } from './request.js';
import { assertOwnUser } from './member-view.js';
import type { RouteContext } from './router.js';

/** Subscription reads (DESIGN 8): by user, by id, its history, the live billing failures and the exceptions. */

export const userParams = lazySchema(() => z.object({ userId: idSchema }));
export const subscriptionParams = lazySchema(() => z.object({ subscriptionId: idSchema }));

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
  assertOwnUser(ctx, record.user_id, `subscription ${subscriptionId} not found`);
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

/* ---- GET /v1/subscriptions?billing=failing[&state=retrying|parked] | dunning[&state=retrying|exhausted] | exceptions ---- */

/** The states each list can be filtered by (the exceptions list has none). */
const LIST_STATES: Readonly<Record<'failing' | 'dunning' | 'exceptions', readonly string[]>> = {
  failing: ['retrying', 'parked'],
  dunning: ['retrying', 'exhausted'],
  exceptions: [],
};

export const subscriptionsQuerySchema = lazySchema(() => z.strictObject({
  billing: z.enum(['failing', 'dunning', 'exceptions']).check(z.describe('failing: live billing failures (DESIGN 5); dunning: declined periods (DESIGN 5b); exceptions: outcomes that did not match (DESIGN 4.1, 6.1)')),
  state: z.optional(z.enum(['retrying', 'parked', 'exhausted'])).check(z.describe('failing: retrying or parked; dunning: retrying or exhausted')),
  limit: limitSchema,
  next: z.optional(cursorSchema),
}).check(z.superRefine((query, ctx) => {
  if (query.state !== undefined && !LIST_STATES[query.billing].includes(query.state)) {
    ctx.addIssue({ code: 'custom', path: ['state'], message: 'failing lists retrying or parked, dunning retrying or exhausted; exceptions has no state' });
  }
})));

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

/**
 * The dunning index holds periods by the state last written, but the list shows each by its state
 * now (a lapsed retrying cycle is exhausted before a run records it). So `exhausted` also walks the
 * RETRYING entries whose next attempt is past; one cursor walks the steps, each period once.
 */
type DunningListStep = { readonly partition: DunningState; readonly keep?: DunningState; readonly past?: true };
const DUNNING_LIST_STEPS: Readonly<Record<DunningState | 'all', readonly DunningListStep[]>> = {
  retrying: [{ partition: 'retrying', keep: 'retrying' }],
  exhausted: [{ partition: 'exhausted', keep: 'exhausted' }, { partition: 'retrying', keep: 'exhausted', past: true }],
  all: [{ partition: 'retrying' }, { partition: 'exhausted', keep: 'exhausted' }],
};

export async function listDunningSubscriptions(
  deps: Pick<AppDeps, 'billing' | 'clock'>,
  options: { state?: DunningState | undefined; limit: number; next?: string | undefined },
): Promise<Page<BillingRecord>> {
  const steps = DUNNING_LIST_STEPS[options.state ?? 'all'];
  const now = deps.clock.now();
  // Cursor: `<step index>.<store cursor>` so a page can continue in the next step.
  let at = 0;
  let cursor: string | null = null;
  if (options.next !== undefined) {
    const dot = options.next.indexOf('.');
    at = Number(options.next.slice(0, dot));
    cursor = options.next.slice(dot + 1) || null;
    if (dot < 1 || !Number.isInteger(at) || at < 0 || at >= steps.length) throw new InvalidPageRequestError('malformed page cursor');
  }
  const items: BillingRecord[] = [];
  for (let reads = 0; reads < MAX_READS_PER_PAGE && items.length < options.limit && at < steps.length; reads++) {
    const step = steps[at]!;
    const request = { limit: options.limit - items.length, cursor };
    const page = step.past ? await deps.billing.listDunning(step.partition, request, formatInstant(now)) : await deps.billing.listDunning(step.partition, request);
    for (const record of page.items) {
      const state = dunningState(record, now);
      if (state !== undefined && (step.keep === undefined || state === step.keep)) items.push(record);
    }
    cursor = page.next;
    if (cursor === null) at += 1;
  }
  return { items, next: at < steps.length ? `${at}.${cursor ?? ''}` : null };
}

export async function listSubscriptions(ctx: RouteContext): Promise<HttpResult> {
  const query = queryParams(ctx.event, subscriptionsQuerySchema);
  const options = { limit: query.limit, next: query.next };
  const page =
    query.billing === 'exceptions'
      ? await listExceptionSubscriptions(ctx.deps, options)
      : query.billing === 'dunning'
        ? await listDunningSubscriptions(ctx.deps, { ...options, state: query.state as DunningState | undefined })
        : await listFailingSubscriptions(ctx.deps, { ...options, state: query.state as 'retrying' | 'parked' | undefined });
  const now = ctx.deps.clock.now();
  return json(200, serializePage(page, (r) => serializeSubscription(r, now)));
}
