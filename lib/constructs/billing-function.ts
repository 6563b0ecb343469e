import { Aws, type Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { BUNDLE_TARGET, MAIN_FIELDS, REQUIRE_BANNER, SIDE_PACKAGES, type SidePackage, sidePackageCommands } from '../bundling.js';

/** The newest Node.js runtime in aws-cdk-lib 2.276; cdk-nag L1 accepts only the newest. */
export const BILLING_RUNTIME = lambda.Runtime.NODEJS_24_X;

export interface BillingFunctionProps {
  readonly functionName: string;
  readonly entry: string;
  readonly timeout: Duration;
  readonly memorySize?: number;
  readonly environment: Record<string, string>;
  readonly logRetention: logs.RetentionDays;
  readonly retainLogs: boolean;
  readonly description: string;
  /** Packages the asset carries pre-bundled beside index.mjs (lib/bundling.ts, sidePackagesOf its manifest); none by default. */
  readonly sidePackages?: readonly SidePackage[];
}

/**
 * The shared defaults of every billing Lambda, set once: local esbuild bundling to minified ESM
 * with source maps, arm64, the latest Node.js runtime, an explicit log group with retention, and
 * a role of its own that starts with nothing but permission to write to that log group (no AWS
 * managed policy). Callers add exactly the access each function needs.
 */
export class BillingFunction extends Construct {
  readonly function: nodejs.NodejsFunction;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: BillingFunctionProps) {
    super(scope, id);
    this.logGroup = new logs.LogGroup(this, 'LogGroup', {
      logGroupName: `/aws/lambda/${props.functionName}`,
      retention: props.logRetention,
      removalPolicy: props.retainLogs ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    this.role = new iam.Role(this, 'Role', {
      // Role names are account-wide, so the region keeps two regional deployments apart.
      roleName: `${props.functionName}-${Aws.REGION}`,
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of ${props.functionName}`,
    });
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'WriteOwnLogs',
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );
    const sidePackages = props.sidePackages ?? [];
    this.function = new nodejs.NodejsFunction(this, 'Function', {
      functionName: props.functionName,
      description: props.description,
      entry: props.entry,
      handler: 'handler',
      runtime: BILLING_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      role: this.role,
      logGroup: this.logGroup,
      environment: { ...props.environment, NODE_OPTIONS: '--enable-source-maps' },
      bundling: {
        format: nodejs.OutputFormat.ESM,
        target: BUNDLE_TARGET,
        minify: true,
        sourceMap: true,
        sourceMapMode: nodejs.SourceMapMode.EXTERNAL,
        // Positions are enough for stack traces; embedding every source triples the upload.
        sourcesContent: false,
        mainFields: MAIN_FIELDS,
        // Ship the SDK versions the lock file pins instead of whatever the runtime carries.
        bundleAwsSDK: true,
        // Loaded on first use from the asset's node_modules, not compiled with index.mjs at cold start (lib/bundling.ts).
        externalModules: [...SIDE_PACKAGES],
        ...(sidePackages.length > 0
          ? {
              commandHooks: {
                beforeBundling: () => [],
                beforeInstall: () => [],
                afterBundling: (inputDir: string, outputDir: string) => sidePackageCommands(inputDir, outputDir, sidePackages),
              },
            }
          : {}),
        // CommonJS dependencies (pino) call require() on Node built-ins; ESM has no require.
        banner: REQUIRE_BANNER,
        forceDockerBundling: false,
      },
    });
  }

  allow(statement: iam.PolicyStatement): this {
    this.role.addToPrincipalPolicy(statement);
    return this;
  }
}
