import { readdirSync } from 'node:fs';
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { CONSOLE_SOURCE_DIR } from '../../lib/constructs/operator-console.js';
import { resourcesOfType, synthBilling } from './support.js';

/** The operator console: a private bucket read only by its CloudFront distribution (OAC), and CORS on the API for that origin. */

const prod = synthBilling({ stage: 'prod' });
const template = prod.statelessTemplate;
const json = template.toJSON() as { Resources: Record<string, { Type: string; Properties?: any; DependsOn?: unknown }>; Outputs: Record<string, any> };
const distributionId = Object.keys(resourcesOfType(template, 'AWS::CloudFront::Distribution'))[0]!;
const filesBucketId = Object.entries(json.Resources).find(([id, r]) => r.Type === 'AWS::S3::Bucket' && id.includes('OperatorConsoleFiles'))?.[0];

describe('operator console (CloudFront + private S3)', () => {
  it('keeps every console bucket private, encrypted and TLS-only', () => {
    const buckets = resourcesOfType(template, 'AWS::S3::Bucket');
    expect(Object.keys(buckets).length).toBe(2);
    for (const bucket of Object.values(buckets)) {
      expect(bucket.Properties).toMatchObject({
        PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
        BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      });
      expect(bucket.Properties).not.toHaveProperty('WebsiteConfiguration');
    }
    expect(filesBucketId).toBeDefined();
  });

  it('lets only this distribution read the files bucket, through origin access control', () => {
    template.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
    template.hasResourceProperties('AWS::CloudFront::OriginAccessControl', {
      OriginAccessControlConfig: Match.objectLike({ OriginAccessControlOriginType: 's3', SigningBehavior: 'always', SigningProtocol: 'sigv4' }),
    });
    template.resourceCountIs('AWS::CloudFront::CloudFrontOriginAccessIdentity', 0);
    const policy = Object.values(resourcesOfType(template, 'AWS::S3::BucketPolicy')).find((p) => JSON.stringify(p.Properties!.Bucket).includes(filesBucketId!))!;
    const statements = (policy.Properties!.PolicyDocument as { Statement: any[] }).Statement;
    const read = statements.find((s) => s.Effect === 'Allow' && JSON.stringify(s.Action).includes('s3:GetObject'));
    expect(read.Principal).toEqual({ Service: 'cloudfront.amazonaws.com' });
    expect(JSON.stringify(read.Condition)).toContain(distributionId);
    // Nothing else is allowed: the other statements deny plain HTTP.
    expect(statements.filter((s) => s.Effect === 'Allow').every((s) => s === read || JSON.stringify(s.Principal).includes('cloudfront') || JSON.stringify(s.Principal).includes('CustomCDKBucketDeployment'))).toBe(true);
  });

  it('serves index.html over HTTPS only, with security headers and logs', () => {
    template.hasResourceProperties('AWS::CloudFront::Distribution', {
      DistributionConfig: Match.objectLike({
        DefaultRootObject: 'index.html',
        DefaultCacheBehavior: Match.objectLike({ ViewerProtocolPolicy: 'redirect-to-https', AllowedMethods: ['GET', 'HEAD'] }),
        Logging: Match.objectLike({ Bucket: Match.anyValue() }),
      }),
    });
    const headers = Object.values(resourcesOfType(template, 'AWS::CloudFront::ResponseHeadersPolicy'))[0]!;
    const security = (headers.Properties as any).ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    expect(JSON.stringify(security.ContentSecurityPolicy)).toContain("default-src 'none'");
    expect(security.FrameOptions.FrameOption).toBe('DENY');
    expect(security.StrictTransportSecurity.AccessControlMaxAgeSec).toBe(365 * 86_400);
  });

  it('allows the console origin (and only it) on the HTTP API by CORS', () => {
    const api = Object.values(resourcesOfType(template, 'AWS::ApiGatewayV2::Api'))[0]!;
    const cors = (api.Properties as any).CorsConfiguration;
    expect(cors.AllowOrigins).toHaveLength(1);
    expect(JSON.stringify(cors.AllowOrigins[0])).toContain(distributionId);
    expect(cors.AllowHeaders).toEqual(expect.arrayContaining(['authorization', 'content-type', 'idempotency-key']));
    expect(cors.AllowMethods).toEqual(expect.arrayContaining(['GET', 'POST', 'PUT']));
    expect(cors).not.toHaveProperty('AllowCredentials');
  });

  it('deploys the console folder plus a config.json naming the API, and invalidates the cache', () => {
    const deployment = Object.values(json.Resources).find((r) => r.Type === 'Custom::CDKBucketDeployment')!;
    expect(deployment.Properties.SourceObjectKeys).toHaveLength(2);
    // config.json's apiUrl is the HTTP API's endpoint, filled in at deploy time.
    expect(JSON.stringify(deployment.Properties.SourceMarkers)).toContain('ApiEndpoint');
    expect(JSON.stringify(deployment.Properties.DistributionId)).toContain(distributionId);
    expect(deployment.Properties.DistributionPaths).toEqual(['/*']);
    // The console is plain files: what is in the folder is what is deployed.
    expect(readdirSync(CONSOLE_SOURCE_DIR).sort()).toEqual(['api.js', 'app.js', 'dom.js', 'index.html', 'lists.js', 'reconciliation.js', 'retry-runs.js', 'style.css', 'subscription.js']);
    expect(Object.keys(json.Outputs)).toEqual(expect.arrayContaining([expect.stringMatching(/^ConsoleUrl/), expect.stringMatching(/^ApiUrl/)]));
  });
});
