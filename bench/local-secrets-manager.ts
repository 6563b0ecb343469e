import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Secrets Manager's `GetSecretValue` on 127.0.0.1, for the cold-start bench: a deployed function
 * reads its secrets by ARN at cold start (src/runtime/secrets.ts), so the bench gives them the same
 * way and points the SDK here with `AWS_ENDPOINT_URL_SECRETS_MANAGER`, the SDK's own per-service
 * endpoint variable (no code of ours knows this server). The AWS JSON 1.1 protocol as Secrets
 * Manager speaks it: `X-Amz-Target: secretsmanager.GetSecretValue`, `{ "SecretId": ... }` in, the
 * secret's ARN, name, string and version out; an unknown id is a `ResourceNotFoundException`, any
 * other operation an `InvalidRequestException`. Nothing else of the service is here.
 */
export class LocalSecretsManager {
  private server: Server | undefined;
  private readonly secrets = new Map<string, string>();
  /** GetSecretValue calls answered, by secret id. */
  readonly reads: string[] = [];

  /** `values`: secret value by ARN. */
  constructor(values: Readonly<Record<string, string>>) {
    for (const [arn, value] of Object.entries(values)) this.secrets.set(arn, value);
  }

  get endpoint(): string {
    const address = this.server?.address() as AddressInfo | null | undefined;
    if (!address) throw new Error('local Secrets Manager not started');
    return `http://127.0.0.1:${address.port}`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const answer = (status: number, body: Record<string, unknown>) => {
          res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
          res.end(JSON.stringify(body));
        };
        if (req.headers['x-amz-target'] !== 'secretsmanager.GetSecretValue') {
          answer(400, { __type: 'InvalidRequestException', message: `not served here: ${String(req.headers['x-amz-target'])}` });
          return;
        }
        let id: unknown;
        try {
          id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { SecretId?: unknown }).SecretId;
        } catch {
          id = undefined;
        }
        const value = typeof id === 'string' ? this.secrets.get(id) : undefined;
        if (typeof id !== 'string' || value === undefined) {
          answer(400, { __type: 'ResourceNotFoundException', message: "Secrets Manager can't find the specified secret." });
          return;
        }
        this.reads.push(id);
        answer(200, { ARN: id, Name: id.split(':').at(-1), SecretString: value, VersionId: '00000000-0000-4000-8000-000000000001', VersionStages: ['AWSCURRENT'], CreatedDate: 1_764_547_200 });
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
