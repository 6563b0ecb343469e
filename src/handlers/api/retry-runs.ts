import * as z from '../../domain/zod.js';
import { lazySchema } from '../../domain/lazy-schema.js';
import { NotFoundError } from '../../domain/errors.js';
import { creationOf, retryRunRequestSchema, runStatus, type RetryRun, type RetryRunItem } from '../../domain/retry-runs.js';
import { startRetryRun } from '../../domain/use-cases/start-retry-run.js';
import { json, parseJsonBody, type HttpResult } from '../shared/http.js';
import { cursorSchema, idSchema, idempotencyKey, limitSchema, pathParams, queryParams } from './request.js';
import type { RouteContext } from './router.js';

/** Bulk retry runs (DESIGN 8): POST creates (or replays) a run, GET reads its status, counts and items. */

export const retryRunParams = lazySchema(() => z.object({ runId: idSchema }));

/** Runs per page of the list: 1-100, default 20. */
export const retryRunListQuerySchema = lazySchema(() => z.strictObject({ limit: limitSchema, next: z.optional(cursorSchema) }));

/** `GET /v1/billing/retry-runs`: past runs, newest first, each as GET of one run shows it (without items). */
export async function listRetryRuns(ctx: RouteContext): Promise<HttpResult> {
  const query = queryParams(ctx.event, retryRunListQuerySchema);
  const page = await ctx.deps.retryRuns.listRuns({ limit: query.limit, cursor: query.next ?? null });
  const now = ctx.deps.clock.now();
  return json(200, { items: page.items.map((run) => runView(run, now)), next: page.next });
}

/** Items per page of GET: 1-1000, default 100. */
export const retryRunQuerySchema = lazySchema(() => z.strictObject({
  limit: z._default(
    z.pipe(z.pipe(z.string().check(z.regex(/^\d{1,4}$/, 'an integer between 1 and 1000')), z.transform(Number)), z.int().check(z.minimum(1), z.maximum(1000))),
    100,
  ),
  next: z.optional(cursorSchema),
}));

function runView(run: RetryRun, now: Date): Record<string, unknown> {
  return {
    run_id: run.run_id,
    status: runStatus(run),
    creation: creationOf(run, now),
    dry_run: run.dry_run,
    state: run.state,
    reason: run.reason,
    actor: run.actor,
    created_at: run.created_at,
    selected: run.selected,
    counts: run.counts,
  };
}

function itemView(item: RetryRunItem): Record<string, unknown> {
  return {
    subscription_id: item.subscription_id,
    user_id: item.user_id,
    billing_date: item.billing_date,
    outcome: item.outcome,
    ...(item.detail !== undefined ? { detail: item.detail } : {}),
    ...(item.finished_at !== undefined ? { finished_at: item.finished_at } : {}),
  };
}

export async function createRetryRun(ctx: RouteContext): Promise<HttpResult> {
  const key = idempotencyKey(ctx.event);
  const request = parseJsonBody(ctx.event, retryRunRequestSchema);
  const started = await startRetryRun(ctx.deps, { actor: ctx.actor!, idempotencyKey: key, request });
  ctx.log.info(
    { run_id: started.run.run_id, state: started.run.state, dry_run: started.run.dry_run, selected: started.run.selected, replayed: started.replayed },
    'retry run',
  );
  return json(202, {
    ...runView(started.run, ctx.deps.clock.now()),
    replayed: started.replayed,
    items: started.items.map((i) => ({ subscription_id: i.subscription_id, user_id: i.user_id })),
  });
}

export async function getRetryRun(ctx: RouteContext): Promise<HttpResult> {
  const { runId } = pathParams(ctx.params, retryRunParams);
  const query = queryParams(ctx.event, retryRunQuerySchema);
  const run = await ctx.deps.retryRuns.get(runId);
  if (!run) throw new NotFoundError(`retry run ${runId} not found`);
  const page = await ctx.deps.retryRuns.listItems(runId, { limit: query.limit, cursor: query.next ?? null });
  return json(200, { ...runView(run, ctx.deps.clock.now()), items: page.items.map(itemView), next: page.next });
}
