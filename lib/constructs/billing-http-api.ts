import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { routeScopes, type ManifestRoute } from '../../src/manifest/index.js';
import type { HandlerName } from '../handlers.js';

export interface BillingHttpApiProps {
  readonly apiName: string;
  readonly jwtIssuer: string;
  readonly jwtAudience: readonly string[];
  readonly routes: readonly ManifestRoute[];
  /** Browser origins allowed to call the API (the operator console's CloudFront origin). */
  readonly corsOrigins?: readonly string[];
  readonly targets: Partial<Record<HandlerName, lambda.IFunction>>;
  readonly logRetention: logs.RetentionDays;
  readonly retainLogs: boolean;
}

/** Access log fields: enough to trace a request to its Lambda invocation and authorizer verdict. */
const ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  requestTime: '$context.requestTime',
  sourceIp: '$context.identity.sourceIp',
  userAgent: '$context.identity.userAgent',
  routeKey: '$context.routeKey',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  responseLatency: '$context.responseLatency',
  integrationLatency: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
  authorizerError: '$context.authorizer.error',
  principal: '$context.authorizer.claims.sub',
};

/** The HTTP API: JWT-authorized `/v1` routes and signature-verified webhooks, with access logs. */
export class BillingHttpApi extends Construct {
  readonly httpApi: apigwv2.HttpApi;
  readonly stage: apigwv2.HttpStage;
  readonly accessLogGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: BillingHttpApiProps) {
    super(scope, id);
    this.httpApi = new apigwv2.HttpApi(this, 'HttpApi', {
      apiName: props.apiName,
      description: 'Billing API: /v1 (JWT) and /webhooks (signed)',
      createDefaultStage: false,
      ...(props.corsOrigins && props.corsOrigins.length > 0
        ? {
            corsPreflight: {
              allowOrigins: [...props.corsOrigins],
              allowMethods: [apigwv2.CorsHttpMethod.GET, apigwv2.CorsHttpMethod.POST, apigwv2.CorsHttpMethod.PUT],
              allowHeaders: ['authorization', 'content-type', 'idempotency-key'],
              maxAge: Duration.hours(1),
            },
          }
        : {}),
    });
    this.accessLogGroup = new logs.LogGroup(this, 'AccessLogs', {
      logGroupName: `/aws/apigateway/${props.apiName}`,
      retention: props.logRetention,
      removalPolicy: props.retainLogs ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    this.stage = new apigwv2.HttpStage(this, 'DefaultStage', {
      httpApi: this.httpApi,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: 200, burstLimit: 400 },
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(this.accessLogGroup),
        format: apigateway.AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS)),
      },
    });

    const authorizer = new HttpJwtAuthorizer('JwtAuthorizer', props.jwtIssuer, {
      authorizerName: `${props.apiName}-jwt`,
      jwtAudience: [...props.jwtAudience],
      identitySource: ['$request.header.Authorization'],
    });
    const integrations = new Map<HandlerName, HttpLambdaIntegration>();
    const integrationFor = (target: HandlerName): HttpLambdaIntegration => {
      let integration = integrations.get(target);
      if (!integration) {
        const fn = props.targets[target];
        if (!fn) throw new Error(`No function for API target ${target}`);
        integration = new HttpLambdaIntegration(`${target}-integration`, fn);
        integrations.set(target, integration);
      }
      return integration;
    };

    for (const route of props.routes) {
      const [created] = this.httpApi.addRoutes({
        path: route.path,
        methods: [route.method as apigwv2.HttpMethod],
        integration: integrationFor(route.target),
        // Any listed scope passes the authorizer; the api decides which one applies (a staff scope over billing:self).
        ...(route.scope ? { authorizer, authorizationScopes: [...routeScopes(route)] } : {}),
      });
      if (!route.scope && created) {
        Validations.of(created).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason: `${route.method} ${route.path} is called by a payment provider that cannot present our JWT; the handler rejects the request with 400 unless its HMAC / Stripe signature over the raw body verifies with a 5-minute tolerance.`,
        });
      }
    }
  }
}
