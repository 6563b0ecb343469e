import * as z from 'zod';
import { NotFoundError } from '../../domain/errors.js';
import { failureState } from '../../domain/ladder.js';
import type { Page } from '../../domain/ports.js';
import type { BillingRecord, BillingStatus } from '../../domain/records.js';
import { formatInstant } from '../../domain/time.js';
import type { AppDeps } from '../../runtime/deps.js';
import { HttpError, json, type HttpResult } from '../shared/http.js';
import { serializeHistoryRow, serializePage, serializeSubscription } from '../shared/serialize.js';
import { cursorSchema, idSchema, limitSchema, pageQuerySchema, pathParams, queryParams } from './request.js';
import type { RouteContext } from './router.js';

/** Subscription reads (DESIGN 8): by user, by id, its history, and the live billing failures. */

const userParams = z.object({ userId: idSchema });
const subscriptionParams = z.object({ subscriptionId: idSchema });

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

/* ---------------- GET /v1/subscriptions?billing=failing[&state=retrying|parked] ---------------- */

const failingQuerySchema = z.strictObject({
  billing: z.literal('failing'),
  state: z.enum(['retrying', 'parked']).optional(),
  limit: limitSchema,
  next: cursorSchema.optional(),
});

/** A live failure is only ever on a PENDING or FAILED record. */
const FAILING_STATUSES: readonly BillingStatus[] = ['PENDING', 'FAILED'];
/** Store pages read per request at most; a page can then hold fewer than `limit` items with `next` set. */
const MAX_READS_PER_PAGE = 5;

/**
 * Where a failing listing stands: which status it is reading, the `billing_date` bound it started
 * with (the store's cursor is bound to it) and the store's cursor within that status.
 */
const failingCursorSchema = z.strictObject({
  s: z.number().int().min(0).max(FAILING_STATUSES.length - 1),
  d: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/),
  c: z.string().min(1).max(4096).nullable(),
});
type FailingCursor = z.infer<typeof failingCursorSchema>;

function decodeFailingCursor(token: string): FailingCursor {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new HttpError(400, 'invalid_cursor', 'the page token is malformed');
  }
  const parsed = failingCursorSchema.safeParse(decoded);
  if (!parsed.success) throw new HttpError(400, 'invalid_cursor', 'the page token is malformed');
  return parsed.data;
}

function encodeFailingCursor(cursor: FailingCursor): string {
  return Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url');
}

/**
 * Scans the due PENDING and FAILED records (a failure is only saved on due work, so
 * `billing_date <= now` finds every live one while skipping all future periods) and keeps those
 * with a live failure in the requested state.
 */
export async function listFailingSubscriptions(
  deps: Pick<AppDeps, 'billing' | 'clock'>,
  options: { state?: 'retrying' | 'parked' | undefined; limit: number; next?: string | undefined },
): Promise<Page<BillingRecord>> {
  let position: FailingCursor | null = options.next
    ? decodeFailingCursor(options.next)
    : { s: 0, d: formatInstant(deps.clock.now()), c: null };
  const items: BillingRecord[] = [];
  for (let reads = 0; position && items.length < options.limit && reads < MAX_READS_PER_PAGE; reads++) {
    const page = await deps.billing.listByStatus(FAILING_STATUSES[position.s]!, position.d, {
      limit: options.limit - items.length,
      cursor: position.c,
    });
    for (const record of page.items) {
      const state = failureState(record);
      if (state !== 'healthy' && (options.state === undefined || state === options.state)) items.push(record);
    }
    if (page.next !== null) position = { ...position, c: page.next };
    else if (position.s + 1 < FAILING_STATUSES.length) position = { s: position.s + 1, d: position.d, c: null };
    else position = null;
  }
  return { items, next: position ? encodeFailingCursor(position) : null };
}

export async function listSubscriptions(ctx: RouteContext): Promise<HttpResult> {
  const query = queryParams(ctx.event, failingQuerySchema);
  const page = await listFailingSubscriptions(ctx.deps, { state: query.state, limit: query.limit, next: query.next });
  const now = ctx.deps.clock.now();
  return json(200, serializePage(page, (r) => serializeSubscription(r, now)));
}
