import { GetItemCommand, PutItemCommand, QueryCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ReconciliationRun, ReconciliationStore, StoredException } from '../../domain/ports/reconciliation.js';
import type { ReconciliationException } from '../../domain/reconciliation/match.js';
import type { PaymentMethod } from '../../domain/records.js';
import { integerNumbers, marshallItem, toAttributeValue, unmarshallItem } from './attribute-codec.js';
import { toDomainError } from './errors.js';

const runKey = (date: string, rail: PaymentMethod) => `RUN#${date}#${rail}`;
const exceptionSort = (id: string) => `EXC#${id}`;

/**
 * The reconciliation table: `pk = RUN#{date}#{rail}` holds the run (`sk = RUN`) and its exceptions
 * (`sk = EXC#{id}`); `pk = EXC#{id}, sk = AT` names the run that holds an exception, for a resolution.
 */
export class DynamoReconciliationStore implements ReconciliationStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
  ) {}

  async saveRun(run: ReconciliationRun, exceptions: readonly ReconciliationException[], at: string): Promise<{ readonly created: readonly string[] }> {
    const created: string[] = [];
    for (const exception of exceptions) {
      if (await this.upsertException(run, exception, at)) created.push(exception.exception_id);
    }
    await this.send('reconciliation.saveRun', () => this.client.send(new PutItemCommand({ TableName: this.table, Item: marshallItem({ ...run, pk: runKey(run.date, run.rail), sk: 'RUN' }) })));
    return { created };
  }

  /** SET what the matcher found; `first_seen_at` and a resolution are kept. True when it was not stored before. */
  private async upsertException(run: ReconciliationRun, exception: ReconciliationException, at: string): Promise<boolean> {
    const fields: Record<string, unknown> = { ...exception, date: run.date, last_seen_at: at };
    const names: Record<string, string> = { '#first': 'first_seen_at' };
    const values: Record<string, AttributeValue> = { ':at': { S: at } };
    const sets = ['#first = if_not_exists(#first, :at)'];
    Object.entries(fields).forEach(([name, value], i) => {
      names[`#f${i}`] = name;
      values[`:f${i}`] = toAttributeValue(value, name);
      sets.push(`#f${i} = :f${i}`);
    });
    const out = await this.send('reconciliation.upsertException', () =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { pk: { S: runKey(run.date, run.rail) }, sk: { S: exceptionSort(exception.exception_id) } },
          UpdateExpression: `SET ${sets.join(', ')}`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'UPDATED_OLD',
        }),
      ),
    );
    const isNew = out.Attributes?.first_seen_at === undefined;
    if (isNew) {
      await this.send('reconciliation.pointer', () =>
        this.client.send(new PutItemCommand({ TableName: this.table, Item: marshallItem({ pk: exceptionSort(exception.exception_id), sk: 'AT', date: run.date, rail: run.rail }) })),
      );
    }
    return isNew;
  }

  async getRun(date: string, rail: PaymentMethod): Promise<{ run: ReconciliationRun; exceptions: StoredException[] } | undefined> {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.send('reconciliation.getRun', () =>
        this.client.send(new QueryCommand({ TableName: this.table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': { S: runKey(date, rail) } }, ExclusiveStartKey: start })),
      );
      items.push(...(page.Items ?? []).map((item) => unmarshallItem(item, integerNumbers)));
      start = page.LastEvaluatedKey;
    } while (start);
    const runItem = items.find((i) => i.sk === 'RUN');
    if (!runItem) return undefined;
    const strip = ({ pk: _pk, sk: _sk, ...rest }: Record<string, unknown>) => rest;
    const run = strip(runItem) as unknown as ReconciliationRun;
    const current = new Set(run.exception_ids);
    // An exception a later run no longer finds stays stored with its resolution; the run lists the current ones.
    const exceptions = items.filter((i) => i.sk !== 'RUN').map((i) => strip(i) as unknown as StoredException).filter((e) => current.has(e.exception_id));
    return { run, exceptions };
  }

  async resolve(exceptionId: string, resolution: NonNullable<StoredException['resolution']>): Promise<StoredException | undefined> {
    const pointer = await this.send('reconciliation.find', () =>
      this.client.send(new GetItemCommand({ TableName: this.table, Key: { pk: { S: exceptionSort(exceptionId) }, sk: { S: 'AT' } }, ConsistentRead: true })),
    );
    if (!pointer.Item) return undefined;
    const { date, rail } = unmarshallItem(pointer.Item) as { date: string; rail: PaymentMethod };
    const out = await this.send('reconciliation.resolve', () =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { pk: { S: runKey(date, rail) }, sk: { S: exceptionSort(exceptionId) } },
          UpdateExpression: 'SET #r = :r',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#r': 'resolution' },
          ExpressionAttributeValues: { ':r': toAttributeValue(resolution, 'resolution') },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    const { pk: _pk, sk: _sk, ...rest } = unmarshallItem(out.Attributes ?? {}, integerNumbers);
    return rest as unknown as StoredException;
  }

  private async send<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw toDomainError(error, { operation });
    }
  }
}
