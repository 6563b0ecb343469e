import { Aws, DefaultStackSynthesizer, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The console's static files (HTML, JS modules, CSS), deployed as they are: no build step. */
export const CONSOLE_SOURCE_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../console');

export interface OperatorConsoleProps {
  readonly stage: string;
  readonly retain: boolean;
}

/**
 * The operator console (docs/design.md, operator surfaces): the static files in a private S3
 * bucket, served only through CloudFront with origin access control (the bucket has no public
 * access and no website endpoint; only this distribution may read it). The page calls the HTTP
 * API with the operator's JWT; the API allows this distribution's origin by CORS.
 */
export class OperatorConsole extends Construct {
  readonly bucket: s3.Bucket;
  readonly logBucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;
  /** `https://<distribution domain>`: the origin the HTTP API's CORS allows. */
  readonly origin: string;

  constructor(scope: Construct, id: string, props: OperatorConsoleProps) {
    super(scope, id);
    // The files are rebuilt from the repository on every deploy (and removed with the stack by
    // the deployment); the logs are kept where the stage keeps data.
    const logRemoval = props.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;

    // CloudFront standard logs need ACLs on the target bucket (bucket-owner-preferred).
    this.logBucket = new s3.Bucket(this, 'Logs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(props.retain ? 365 : 30) }],
      removalPolicy: logRemoval,
    });
    Validations.of(this.logBucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This bucket is the destination of the console bucket access logs and of the CloudFront standard logs; logging its own access into itself would loop, and nothing but AWS log delivery writes to it.',
    });

    this.bucket = new s3.Bucket(this, 'Files', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.logBucket,
      serverAccessLogsPrefix: 'bucket/',
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // The API is called cross-origin from the console; its URL is in config.json. The policy
    // allows the region's execute-api hosts rather than the API's own id, which would make the
    // API (CORS: this origin) and this policy (the API's URL) depend on each other.
    const headers = new cloudfront.ResponseHeadersPolicy(this, 'SecurityHeaders', {
      comment: `Billing console (${props.stage}): CSP, HSTS, no framing, no sniffing`,
      securityHeadersBehavior: {
        contentSecurityPolicy: {
          contentSecurityPolicy: `default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self' https://*.execute-api.${Aws.REGION}.amazonaws.com; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
          override: true,
        },
        strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: true, override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: cloudfront.HeadersReferrerPolicy.NO_REFERRER, override: true },
      },
    });

    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: `Billing operator console (${props.stage})`,
      defaultRootObject: 'index.html',
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: headers,
        compress: true,
      },
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      enableLogging: true,
      logBucket: this.logBucket,
      logFilePrefix: 'cloudfront/',
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
    });
    this.origin = `https://${this.distribution.distributionDomainName}`;
    Validations.of(this.distribution).acknowledge(
      {
        id: 'AwsSolutions-CFR1',
        reason: 'The console serves only static HTML, JS and CSS with no data in them; operators work from anywhere, and every action is authorized by the HTTP API with the operator JWT, so a geo restriction protects nothing.',
      },
      {
        id: 'AwsSolutions-CFR2',
        reason: 'The distribution serves static files only (GET/HEAD, cached); a CloudFront WAF web ACL must live in us-east-1, outside these stacks. The HTTP API it calls is throttled and JWT-authorized.',
      },
      {
        id: 'AwsSolutions-CFR4',
        reason: 'The distribution uses the default *.cloudfront.net certificate, for which CloudFront cannot enforce a minimum viewer TLS version; a custom domain with its own certificate and TLSv1.2_2021 is the way to meet it, which these stacks do not configure yet.',
      },
    );
  }

  /** Uploads the files and a config.json naming the API; invalidates the distribution's cache. */
  deploy(apiUrl: string): s3deploy.BucketDeployment {
    const deployment = new s3deploy.BucketDeployment(this, 'Deploy', {
      sources: [s3deploy.Source.asset(CONSOLE_SOURCE_DIR), s3deploy.Source.jsonData('config.json', { apiUrl })],
      destinationBucket: this.bucket,
      distribution: this.distribution,
      distributionPaths: ['/*'],
      prune: true,
      retainOnDelete: false,
      memoryLimit: 256,
    });
    // The deployment's Lambda is a CDK singleton per stack; cdk-nag v3 wants each finding acknowledged by its own id.
    const stack = Stack.of(this);
    // The asset bucket's name holds the account and region when the stack has them (cdk synth with credentials or CDK_DEFAULT_*).
    const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;
    const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
    const filesBucket = stack.resolve((this.bucket.node.defaultChild as s3.CfnBucket).logicalId) as string;
    const why = 'CDK BucketDeployment provider, which runs only during a deploy to copy the console files from the CDK asset bucket into the console bucket and prune old ones';
    const findings: [string, string][] = [
      ['AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]', `${why}: the managed policy only lets it write its own CloudWatch logs.`],
      ...['s3:GetObject*', 's3:GetBucket*', 's3:List*', 's3:DeleteObject*', 's3:Abort*'].map((action): [string, string] => [
        `AwsSolutions-IAM5[Action::${action}]`,
        `${why}: CDK grants it read on the asset bucket and read/write/delete on the console bucket as object-level wildcards.`,
      ]),
      [`AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-${DefaultStackSynthesizer.DEFAULT_QUALIFIER}-assets-${account}-${region}/*]`, `${why}: it reads the console asset from the CDK bootstrap asset bucket.`],
      [`AwsSolutions-IAM5[Resource::<${filesBucket}.Arn>/*]`, `${why}: it writes and prunes every object of the console bucket, and nothing else.`],
      ['AwsSolutions-IAM5[Resource::*]', `${why}: cloudfront:CreateInvalidation and GetInvalidation take no resource narrower than * in the policy CDK generates.`],
      ['AwsSolutions-L1', `${why}: CDK pins its Python runtime together with the AWS CLI layer it ships; it serves no request of the billing system.`],
    ];
    for (const child of stack.node.children) {
      if (!child.node.id.startsWith('Custom::CDKBucketDeployment')) continue;
      Validations.of(child).acknowledge(...findings.map(([id, reason]) => ({ id, reason })));
    }
    return deployment;
  }
}
