import { QueryCommand, type DynamoDBClient, type QueryCommandInput, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { toDomainError } from './errors.js';

/**
 * The counter items one Query selects (paged), each numeric attribute named in `attributes` summed
 * into its field (absent or non-numeric counts 0): what the ACH return-rate counters and the gauge
 * counters both read.
 */
export async function sumCounterItems<F extends string>(
  client: DynamoDBClient,
  query: Omit<QueryCommandInput, 'ExclusiveStartKey'>,
  attributes: Readonly<Record<F, string>>,
  operation: string,
): Promise<Record<F, number>> {
  const fields = Object.keys(attributes) as F[];
  const totals = Object.fromEntries(fields.map((f) => [f, 0])) as Record<F, number>;
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    let out;
    try {
      out = await client.send(new QueryCommand({ ...query, ExclusiveStartKey: startKey }));
    } catch (error) {
      throw toDomainError(error, { operation });
    }
    for (const item of out.Items ?? []) {
      for (const field of fields) {
        const n = Number(item[attributes[field]]?.N ?? 0);
        if (Number.isFinite(n)) totals[field] += n;
      }
    }
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return totals;
}
