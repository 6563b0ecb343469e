import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TestApp } from '../support/app.js';
import { tablesOf, WRITE_COMMANDS, type WriteInput } from '../support/write-counter.js';

/**
 * Which members' records a write may have changed, seen on the DynamoDB client every store and
 * handler of the app sends through (a middleware, so no write escapes it). A write to the
 * billing-activity or history table names the user_id of every item it writes (it is the
 * partition key), so a member no such write named since a read still has what that read saw:
 * the checks read a member again only then, and the gauges only after a write to the table.
 */

/** The model's member ids (`m-<run>-u<i>`, BillingWorld). */
const MEMBER_ID = /m-[0-9a-f]{8}-u\d+/g;

export class WriteWatch {
  /** Per member: bumped when a write naming them is sent and again when it is answered. */
  private readonly generations = new Map<string, number>();
  private billingWrites = 0;

  constructor(client: DynamoDBClient, billingTable: string, historyTable: string) {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const command = String((context as { commandName?: unknown }).commandName ?? '');
        if (!WRITE_COMMANDS.has(command)) return next(args);
        const tables = tablesOf(args.input as WriteInput, { conditionChecks: true });
        const billing = tables.includes(billingTable);
        if (!billing && !tables.includes(historyTable)) return next(args);
        const users = new Set(JSON.stringify(args.input).match(MEMBER_ID) ?? []);
        // Before and after: a read that overlapped the write sees a changed generation and is not kept.
        const bump = () => {
          if (billing) this.billingWrites += 1;
          for (const u of users) this.generations.set(u, (this.generations.get(u) ?? 0) + 1);
        };
        bump();
        try {
          return await next(args);
        } finally {
          bump();
        }
      },
      { step: 'initialize', name: 'modelWriteWatch' },
    );
  }

  /** Changes whenever a write naming the member is sent or answered. */
  generation(user: string): number {
    return this.generations.get(user) ?? 0;
  }

  /** Changes whenever a write to the billing-activity table (records, gauge counters, indexes) is sent or answered. */
  tableGeneration(): number {
    return this.billingWrites;
  }
}

const watches = new WeakMap<TestApp, WriteWatch>();

/** The app's watch, installed on its client at the first call. */
export function writeWatchOf(app: TestApp): WriteWatch {
  let watch = watches.get(app);
  if (!watch) {
    watch = new WriteWatch(app.db.client, app.db.tables.billingActivity, app.db.tables.billingActivityHistory);
    watches.set(app, watch);
  }
  return watch;
}

/**
 * One member's reads, kept while no write names them: a value read across a write is not kept.
 * `read` returns a copy, so a caller that changes what it got does not change the next caller's.
 */
export class MemberReads<T> {
  private readonly kept = new Map<string, { generation: number; value: T }>();
  constructor(
    private readonly watch: WriteWatch,
    private readonly load: (user: string) => Promise<T>,
  ) {}

  async read(user: string): Promise<T> {
    const kept = this.kept.get(user);
    if (kept && kept.generation === this.watch.generation(user)) return structuredClone(kept.value);
    const before = this.watch.generation(user);
    const value = await this.load(user);
    if (this.watch.generation(user) === before) this.kept.set(user, { generation: before, value: structuredClone(value) });
    else this.kept.delete(user);
    return value;
  }

  /** The value kept for the member, if no write named them since it was read. */
  peek(user: string): T | undefined {
    const kept = this.kept.get(user);
    return kept && kept.generation === this.watch.generation(user) ? structuredClone(kept.value) : undefined;
  }

  forget(): void {
    this.kept.clear();
  }
}
