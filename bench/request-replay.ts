import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The second floor of the cold-start section: a bare SDK client that makes the same AWS requests
 * as a function's first call. The bare DynamoDB client makes one GetItem; a function whose first
 * call must lock, read and release makes three, and collections-job reads every shard. Beside
 * the verdict against the one-GetItem client, this floor separates what the work costs (the
 * requests themselves, each the first of its command in a fresh process) from what our code
 * costs on top (bundle size, validation, logging, wiring).
 *
 * How: the function's first call runs once with its endpoints pointed at a recording proxy
 * (`RequestRecorder`), which forwards every request to the real endpoint and keeps its
 * `X-Amz-Target` and JSON body. The requests are grouped into waves (a wave starts when a
 * request starts after every request of the wave before has ended: what the function awaited
 * together). The floor's bundle (`replaySource`) holds only the SDK clients and commands those
 * requests name, and sends the recorded inputs wave by wave, as the function did.
 */

export interface RecordedRequest {
  /** `X-Amz-Target`, e.g. `DynamoDB_20120810.Query`, `AWSEvents.PutEvents`, `secretsmanager.GetSecretValue`. */
  readonly target: string;
  readonly input: unknown;
  readonly startedAt: number;
  readonly endedAt: number;
}

/** An HTTP proxy on 127.0.0.1 in front of one AWS JSON-protocol endpoint, recording while `recording` is on. */
export class RequestRecorder {
  recording = false;
  readonly requests: RecordedRequest[] = [];
  private server: Server | undefined;

  /**
   * `target`: the endpoint to forward to, or how to learn it once its server has started.
   * `latencyMs` holds each answer that long (a test's way to make requests sent together overlap
   * on a loaded machine, where the second may arrive after the first was answered); none by default.
   */
  constructor(
    private readonly target: string | (() => string),
    private readonly options: { readonly latencyMs?: number } = {},
  ) {}

  get endpoint(): string {
    const address = this.server?.address() as AddressInfo | null | undefined;
    if (!address) throw new Error('recorder not started');
    return `http://127.0.0.1:${address.port}`;
  }

  async start(): Promise<void> {
    const upstream = new URL(typeof this.target === 'string' ? this.target : this.target());
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const startedAt = performance.now();
        const forward = httpRequest(
          { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
          (answer) => {
            const out: Buffer[] = [];
            answer.on('data', (c: Buffer) => out.push(c));
            answer.on('end', () => {
              const finish = () => {
                const target = req.headers['x-amz-target'];
                if (this.recording && typeof target === 'string') {
                  this.requests.push({ target, input: JSON.parse(body.toString('utf8') || '{}'), startedAt, endedAt: performance.now() });
                }
                res.writeHead(answer.statusCode ?? 500, answer.headers);
                res.end(Buffer.concat(out));
              };
              if (this.options.latencyMs) setTimeout(finish, this.options.latencyMs);
              else finish();
            });
          },
        );
        forward.on('error', (error) => {
          res.writeHead(502);
          res.end(String(error));
        });
        forward.end(body);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** Records what `work` sends through this proxy. */
  async record(work: () => Promise<void>): Promise<RecordedRequest[]> {
    this.requests.length = 0;
    this.recording = true;
    try {
      await work();
    } finally {
      this.recording = false;
    }
    return [...this.requests];
  }
}

export type Wave = readonly (readonly [target: string, input: unknown])[];

/** Requests grouped as the caller awaited them: a request that starts after every earlier one ended opens a new wave. */
export function wavesOf(requests: readonly RecordedRequest[]): Wave[] {
  const sorted = [...requests].sort((a, b) => a.startedAt - b.startedAt);
  const waves: (readonly [string, unknown])[][] = [];
  let waveEnd = -Infinity;
  for (const r of sorted) {
    if (waves.length === 0 || r.startedAt > waveEnd) waves.push([]);
    waves.at(-1)!.push([r.target, r.input]);
    waveEnd = Math.max(waveEnd, r.endedAt);
  }
  return waves;
}

/** The SDK package, client and endpoint variable of each service a first call may reach. */
const SERVICES: Record<string, { readonly pkg: string; readonly client: string; readonly endpointEnv: string }> = {
  DynamoDB_20120810: { pkg: '@aws-sdk/client-dynamodb', client: 'DynamoDBClient', endpointEnv: 'DYNAMO_ENDPOINT' },
  AWSEvents: { pkg: '@aws-sdk/client-eventbridge', client: 'EventBridgeClient', endpointEnv: 'EVENTBRIDGE_ENDPOINT' },
  secretsmanager: { pkg: '@aws-sdk/client-secrets-manager', client: 'SecretsManagerClient', endpointEnv: 'AWS_ENDPOINT_URL_SECRETS_MANAGER' },
};

/**
 * The floor's handler: one client per service named by `waves` (as the bare client builds its
 * one), the commands they name, and a handler that sends the waves it is given, each wave's
 * requests together. A refused request (a condition the recorded run met and the replay does
 * not) is a request made all the same: its answer is ignored.
 */
export function replaySource(waves: readonly Wave[]): string {
  const targets = [...new Set(waves.flatMap((w) => w.map(([t]) => t)))].sort();
  const byService = new Map<string, string[]>();
  for (const t of targets) {
    const [service, operation] = t.split('.') as [string, string];
    if (!SERVICES[service]) throw new Error(`replay: no SDK client known for ${t}`);
    byService.set(service, [...(byService.get(service) ?? []), operation]);
  }
  const lines: string[] = [];
  const entries: string[] = [];
  [...byService].forEach(([service, operations], i) => {
    const s = SERVICES[service]!;
    lines.push(`import { ${s.client}, ${operations.map((o) => `${o}Command`).join(', ')} } from '${s.pkg}';`);
    lines.push(`const c${i} = new ${s.client}({ region: process.env.DYNAMO_REGION, endpoint: process.env.${s.endpointEnv}, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });`);
    for (const o of operations) entries.push(`'${service}.${o}': (input) => c${i}.send(new ${o}Command(input))`);
  });
  lines.push(`const send = { ${entries.join(', ')} };`);
  lines.push(`export const handler = async (event) => {
  let requests = 0;
  for (const wave of event.waves) {
    await Promise.all(wave.map(([target, input]) => send[target](input).catch(() => undefined)));
    requests += wave.length;
  }
  return { requests };
};`);
  return `${lines.join('\n')}\n`;
}
