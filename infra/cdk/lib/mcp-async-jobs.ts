import * as fs from 'fs';
import * as path from 'path';
import { Aws, CfnElement, CfnOutput, Duration, Fn, RemovalPolicy, Stack } from 'aws-cdk-lib/core';
import * as autoscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as agentcore from 'aws-cdk-lib/aws-bedrockagentcore';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sagemaker from 'aws-cdk-lib/aws-sagemaker';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct, IConstruct } from 'constructs';
import { catalogLayerDir, catalogOf } from './catalog';
import { dashboardBody } from './dashboard';
import { McpAsyncJobsProps } from './props';
import { REPO_ROOT } from './repository';
import { given, settingsOf, usesOAuth } from './settings';

/** gateway-target's: its calls do not stream, so a wait is 20 s at most. */
const GATEWAY_TARGET_TIMEOUT_SECS = 45;
const LAMBDA = new iam.ServicePrincipal('lambda.amazonaws.com');
const RETENTION_14_DAYS = Duration.seconds(1209600);

interface Statement {
  readonly Effect: 'Allow';
  readonly Action: string | string[];
  readonly Resource: string | string[];
}

/** An IAM statement in the template's spelling: one action or resource alone, several as a list. */
function allow(actions: string[], resources: string[]): Statement {
  const one = (values: string[]) => (values.length === 1 ? values[0] : values);
  return { Effect: 'Allow', Action: one(actions), Resource: one(resources) };
}

// X-Ray takes no resource-level permissions.
const xray = () => allow(['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], ['*']);

// Nor do SageMaker's lineage lists (the IAM service authorization reference names no resource
// type for them).
const lineageLists = () => allow(['sagemaker:ListAssociations', 'sagemaker:ListArtifacts'], ['*']);

/**
 * The async side of SageMaker-backed MCP tools: the resources infra/template.yaml deploys for the
 * same parameter values, under the template's logical ids (so that tests/infra/test_cdk_parity.py
 * can hold each one to it), decided at synth time from the props.
 */
export class McpAsyncJobs extends Construct {
  public readonly resultsTable: dynamodb.Table;
  public readonly pipelineResultsTable: dynamodb.Table;
  /** The completion queue of pipeline runs; undefined in an inference-only stack. */
  public readonly pipelineResultsQueue?: sqs.Queue;
  public readonly pipelineResultsDlq?: sqs.Queue;
  /** Where the pipelines' CallbackSteps send what they ask a person (docs/approvals.md). */
  public readonly pipelineCallbackQueue?: sqs.Queue;
  public readonly pipelineCallbackDlq?: sqs.Queue;
  public readonly asyncFailureDlq: sqs.Queue;
  /** The bus recorded outcomes are announced on; undefined without completion events. */
  public readonly completionEventBusName?: string;
  /** Completion events the webhook did not take; undefined without a webhook. */
  public readonly completionWebhookDlq?: sqs.Queue;
  /** The topic the endpoint's NotificationConfig names as SuccessTopic (created, or the one given). */
  public readonly successTopicArn: string;
  public readonly errorTopicArn: string;
  public readonly notificationHandler: lambda.Function;
  /** Undefined in an inference-only stack. */
  public readonly pipelineRouter?: lambda.Function;
  public readonly mcpTools: lambda.Function;
  public readonly mcpToolsUrl: lambda.CfnUrl;
  /** For IAM callers of the Function URL. */
  public readonly callerPolicy: iam.CfnManagedPolicy;
  public readonly gatewayTarget?: lambda.Function;
  public readonly userPool?: cognito.CfnUserPool;
  public readonly userPoolClient?: cognito.CfnUserPoolClient;
  public readonly endpoint?: sagemaker.CfnEndpoint;
  /** The catalog's endpoints the construct created (catalogModelNames). */
  public readonly catalogEndpoints: sagemaker.CfnEndpoint[];
  /** The topic the alarms notify (alarmTopicArn, or the one created). */
  public readonly alarmTopicArn: string;

  private readonly idPrefix: string;

  constructor(scope: Construct, id: string, props: McpAsyncJobsProps) {
    super(scope, id);
    const s = settingsOf(props);
    this.idPrefix = props.logicalIdPrefix ?? '';
    const name = props.namePrefix ?? Aws.STACK_NAME;
    const functionsDir = props.functionsDir ?? path.join(REPO_ROOT, 'target', 'lambda');
    const partition = Aws.PARTITION;
    const region = Aws.REGION;
    const account = Aws.ACCOUNT_ID;
    const namespace = `McpAsyncJobs/${name}`;
    const bucketArn = `arn:${partition}:s3:::${s.ioBucketName}`;
    const pipelineArn = `arn:${partition}:sagemaker:${region}:${account}:pipeline/${s.pipelineName}`;
    const s3OutputPath = `s3://${s.ioBucketName}/${s.outputPrefix}`;
    const s3FailurePath = `s3://${s.ioBucketName}/${s.failurePrefix}`;
    const readableOutcomes = [`${bucketArn}/${s.outputPrefix}*`, `${bucketArn}/${s.failurePrefix}*`];
    // The tool catalog's endpoints and pipelines, beside the stack's own (granted as the template
    // grants CatalogEndpointNames and CatalogPipelineNames: in statements of their own).
    const { file: toolCatalog, endpoints: catalogEndpoints, pipelines: catalogPipelines, models: catalogModels } = catalogOf(s);
    const sagemakerArn = `arn:${partition}:sagemaker:${region}:${account}`;
    const catalogPipelineArns = catalogPipelines.map((p) => `${sagemakerArn}:pipeline/${p}`);
    const catalogExecutionArns = catalogPipelineArns.map((arn) => `${arn}/execution/*`);

    const createSuccessTopic = !given(s.successTopicArn);
    const createErrorTopic = !given(s.errorTopicArn);
    const hasExecutionRole = given(s.modelExecutionRoleArn);
    const createEndpoint = given(s.modelName);
    const createCognito = s.createUserPool;
    const oauthAuth = usesOAuth(s);
    const bearerAuth = s.functionUrlAuthType === 'NONE' && !oauthAuth;
    const gateway = given(s.agentCoreGatewayId);
    const hasPipeline = given(s.pipelineName);
    const tracing = () => (s.tracingMode === 'Active' ? [xray()] : []);

    // ---------------------------------------------------------------- storage

    const table = (tableId: string, partitionKey: string, sortKey?: string) => this.pin(new dynamodb.Table(this, tableId, {
      partitionKey: { name: partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: sortKey ? { name: sortKey, type: dynamodb.AttributeType.STRING } : undefined,
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: 'ttl',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      // Kept on delete (DeletionPolicy RetainExceptOnCreate) and on replacement, but not after a
      // failed first create.
      removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    }), tableId);
    this.resultsTable = table('ResultsTable', 'inference_id');
    this.pipelineResultsTable = table('PipelineResultsTable', 'session_id', 'execution_arn');

    const queue = (queueId: string, more: Partial<sqs.QueueProps> = {}) => this.pin(new sqs.Queue(this, queueId, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      retentionPeriod: RETENTION_14_DAYS,
      // The template leaves DeletionPolicy at CloudFormation's default, Delete.
      removalPolicy: RemovalPolicy.DESTROY,
      ...more,
    }), queueId);
    if (hasPipeline) {
      this.pipelineResultsDlq = queue('PipelineResultsDLQ');
      this.pipelineResultsQueue = queue('PipelineResultsQueue', {
        deadLetterQueue: { queue: this.pipelineResultsDlq, maxReceiveCount: 5 },
      });
      this.pipelineCallbackDlq = queue('PipelineCallbackDLQ');
      this.pipelineCallbackQueue = queue('PipelineCallbackQueue', {
        visibilityTimeout: Duration.seconds(180), // six times pipeline-router's timeout
        deadLetterQueue: { queue: this.pipelineCallbackDlq, maxReceiveCount: 5 },
      });
    }
    // Events that notification-handler or pipeline-router failed on after Lambda's retries.
    this.asyncFailureDlq = queue('AsyncFailureDLQ');
    const dlq = this.asyncFailureDlq;

    // ---------------------------------------------------------------- topics

    const topic = (topicId: string) => this.pin(new sns.CfnTopic(this, topicId, { kmsMasterKeyId: 'alias/aws/sns' }), topicId);
    const successTopic = createSuccessTopic ? topic('SuccessTopic') : undefined;
    const errorTopic = createErrorTopic ? topic('ErrorTopic') : undefined;
    this.successTopicArn = successTopic ? successTopic.ref : s.successTopicArn;
    this.errorTopicArn = errorTopic ? errorTopic.ref : s.errorTopicArn;

    // SageMaker publishes as the endpoint's execution role. The AWS managed key alias/aws/sns
    // lets any principal of the account encrypt through SNS, so sns:Publish is all it needs.
    const topicPolicy = (policyId: string, created?: sns.CfnTopic) => created && hasExecutionRole
      ? this.pin(new sns.CfnTopicPolicy(this, policyId, {
        topics: [created.ref],
        policyDocument: {
          Version: '2012-10-17',
          Statement: [{
            Sid: 'EndpointExecutionRolePublishes',
            Effect: 'Allow',
            Principal: { AWS: s.modelExecutionRoleArn },
            Action: 'sns:Publish',
            Resource: created.ref,
          }],
        },
      }), policyId)
      : undefined;
    const successTopicPolicy = topicPolicy('SuccessTopicPolicy', successTopic);
    const errorTopicPolicy = topicPolicy('ErrorTopicPolicy', errorTopic);

    // Where the alarms notify, when no alarmTopicArn is given. Not encrypted: CloudWatch cannot
    // publish to a topic under alias/aws/sns, whose key policy AWS owns; alarm states carry no job data.
    if (given(s.alarmTopicArn)) {
      this.alarmTopicArn = s.alarmTopicArn;
    } else {
      const alarmTopic = this.pin(new sns.CfnTopic(this, 'AlarmTopic', { displayName: `${name} alarms` }), 'AlarmTopic');
      this.alarmTopicArn = alarmTopic.ref;
      if (given(s.alarmEmail)) {
        this.pin(new sns.CfnSubscription(this, 'AlarmEmailSubscriptionToTopic', {
          topicArn: alarmTopic.ref, protocol: 'email', endpoint: s.alarmEmail,
        }), 'AlarmEmailSubscriptionToTopic');
      }
    }
    const alarmActions = [this.alarmTopicArn];

    // Customer managed keys: the endpoint's (outputs) and the bucket's default (inputs, and outputs without one).
    const endpointKeyArn = !given(s.endpointKmsKeyId) ? undefined : s.endpointKmsKeyId.startsWith('arn:')
      ? s.endpointKmsKeyId : `arn:${partition}:kms:${region}:${account}:key/${s.endpointKmsKeyId}`;
    const bucketKeyArn = given(s.ioBucketKmsKeyArn) ? s.ioBucketKmsKeyArn : undefined;
    const outputKeys = [endpointKeyArn, bucketKeyArn].filter(given);
    const decryptOutputs = () => (outputKeys.length > 0 ? [allow(['kms:Decrypt'], outputKeys)] : []);

    // SageMaker publishes and writes as the Model's execution role, which this stack does not own:
    // what it needs for this stack is attached to it (by its name, the ARN's last element).
    const modelRolePolicy = (createEndpoint || catalogModels.length > 0) && s.attachModelRolePolicy
      ? this.pin(new iam.CfnPolicy(this, 'ModelExecutionRolePolicy', {
        // Named after the stack's id: any stack name fits, and two stacks on one role keep their own.
        policyName: Fn.join('', ['mcp-async-jobs-', Fn.select(2, Fn.split('/', Aws.STACK_ID))]),
        roles: [s.modelExecutionRoleArn.split('/').pop() as string],
        policyDocument: {
          Version: '2012-10-17',
          Statement: [
            { Sid: 'PublishOutcomes', ...allow(['sns:Publish'], [this.successTopicArn, this.errorTopicArn]) },
            { Sid: 'WriteOutcomes', ...allow(['s3:PutObject'], readableOutcomes) },
            { Sid: 'ReadInputs', ...allow(['s3:GetObject'], [`${bucketArn}/inputs/*`]) },
            ...(outputKeys.length > 0 ? [{ Sid: 'UseKeys', ...allow(['kms:GenerateDataKey', 'kms:Decrypt'], outputKeys) }] : []),
          ],
        },
      }), 'ModelExecutionRolePolicy')
      : undefined;

    // ---------------------------------------------------------------- the async endpoint (optional)
    // Wired at creation: SageMaker publishes outcomes only to the NotificationConfig topics and
    // writes only to these S3 paths, which the functions' IAM grants. An EndpointConfig is
    // immutable: CloudFormation replaces it (a new generated name) on any change.

    // One endpoint and its scaling: `ids` names its resources as the template does (AsyncEndpoint
    // and Endpoint..., or CatalogEndpoint<i>...). The stack's own endpoint is named from the
    // parameter (its scaling waits on it by DependsOn); a catalog's reads its name back (GetAtt).
    const asyncEndpoint = (ids: { config: string, endpoint: string, prefix: string }, endpointName: string,
      modelName: string, nameFromEndpoint: boolean) => {
      const kmsKeyId = given(s.endpointKmsKeyId) ? s.endpointKmsKeyId : undefined;
      const config = this.pin(new sagemaker.CfnEndpointConfig(this, ids.config, {
        kmsKeyId,
        productionVariants: [{
          variantName: s.variantName,
          modelName,
          instanceType: s.endpointInstanceType,
          initialInstanceCount: s.endpointInitialInstanceCount,
          initialVariantWeight: 1,
        }],
        asyncInferenceConfig: {
          clientConfig: { maxConcurrentInvocationsPerInstance: s.maxConcurrentInvocationsPerInstance },
          outputConfig: {
            s3OutputPath,
            s3FailurePath,
            kmsKeyId,
            notificationConfig: {
              successTopic: this.successTopicArn,
              errorTopic: this.errorTopicArn,
              // Responses up to 128 KB arrive in the message: no S3 read for them.
              includeInferenceResponseIn: ['SUCCESS_NOTIFICATION_TOPIC'],
            },
          },
        },
        // SageMaker publishes a test notification when the endpoint is created: these references
        // order the topic policies first (as the template does, where a DependsOn cannot name a
        // resource whose condition may be false).
        tags: [
          { key: 'success-topic-policy', value: successTopicPolicy ? successTopicPolicy.ref : 'existing-topic' },
          { key: 'error-topic-policy', value: errorTopicPolicy ? errorTopicPolicy.ref : 'existing-topic' },
          // And the execution role's policy: SageMaker writes and publishes as that role.
          { key: 'model-role-policy', value: modelRolePolicy ? modelRolePolicy.ref : 'not-attached' },
        ],
      }), ids.config);

      const endpoint = this.pin(new sagemaker.CfnEndpoint(this, ids.endpoint, {
        endpointName,
        endpointConfigName: config.attrEndpointConfigName,
      }), ids.endpoint);
      const endpointRef = nameFromEndpoint ? endpoint.attrEndpointName : endpointName;

      // Scale to zero, and back out: target tracking keeps the backlog per instance near the
      // target (and removes the last instance once the queue is empty); at zero instances that
      // metric has no data, so a step policy fired by HasBacklogWithoutCapacity adds the first one.
      const scalableTarget = this.pin(new autoscaling.CfnScalableTarget(this, `${ids.prefix}ScalableTarget`, {
        serviceNamespace: 'sagemaker',
        resourceId: `endpoint/${endpointRef}/variant/${s.variantName}`,
        scalableDimension: 'sagemaker:variant:DesiredInstanceCount',
        minCapacity: s.endpointMinInstanceCount,
        maxCapacity: s.endpointMaxInstanceCount,
      }), `${ids.prefix}ScalableTarget`);
      if (!nameFromEndpoint) scalableTarget.addResourceDependency(endpoint);
      const endpointDimensions = [{ name: 'EndpointName', value: endpointRef }];

      this.pin(new autoscaling.CfnScalingPolicy(this, `${ids.prefix}BacklogScalingPolicy`, {
        policyName: `${name}-backlog-per-instance`,
        policyType: 'TargetTrackingScaling',
        scalingTargetId: scalableTarget.ref,
        targetTrackingScalingPolicyConfiguration: {
          targetValue: s.targetBacklogPerInstance,
          scaleInCooldown: 600,
          scaleOutCooldown: 300,
          customizedMetricSpecification: {
            namespace: 'AWS/SageMaker',
            metricName: 'ApproximateBacklogSizePerInstance',
            dimensions: endpointDimensions,
            statistic: 'Average',
          },
        },
      }), `${ids.prefix}BacklogScalingPolicy`);

      const scaleOutFromZero = this.pin(new autoscaling.CfnScalingPolicy(this, `${ids.prefix}ScaleOutFromZeroPolicy`, {
        policyName: `${name}-scale-out-from-zero`,
        policyType: 'StepScaling',
        scalingTargetId: scalableTarget.ref,
        stepScalingPolicyConfiguration: {
          adjustmentType: 'ChangeInCapacity',
          cooldown: 300,
          metricAggregationType: 'Average',
          stepAdjustments: [{ metricIntervalLowerBound: 0, scalingAdjustment: 1 }],
        },
      }), `${ids.prefix}ScaleOutFromZeroPolicy`);

      this.pin(new cloudwatch.CfnAlarm(this, `${ids.prefix}HasBacklogWithoutCapacityAlarm`, {
        alarmDescription: 'Requests wait on an endpoint with no instance; adds the first one (scale out from zero).',
        namespace: 'AWS/SageMaker',
        metricName: 'HasBacklogWithoutCapacity',
        dimensions: endpointDimensions,
        statistic: 'Average',
        period: 60,
        evaluationPeriods: 2,
        datapointsToAlarm: 2,
        threshold: 1,
        comparisonOperator: 'GreaterThanOrEqualToThreshold',
        treatMissingData: 'missing',
        alarmActions: [scaleOutFromZero.ref],
      }), `${ids.prefix}HasBacklogWithoutCapacityAlarm`);
      return { config, endpoint };
    };

    let endpointConfig: sagemaker.CfnEndpointConfig | undefined;
    if (createEndpoint) {
      const created = asyncEndpoint({ config: 'AsyncEndpointConfig', endpoint: 'AsyncEndpoint', prefix: 'Endpoint' },
        s.asyncEndpointName, s.modelName, false);
      endpointConfig = created.config;
      this.endpoint = created.endpoint;
    }
    // The catalog's endpoints with a Model, each as the template's slot of its place.
    this.catalogEndpoints = catalogModels.map((m) => asyncEndpoint(
      { config: `CatalogEndpoint${m.slot}Config`, endpoint: `CatalogEndpoint${m.slot}`, prefix: `CatalogEndpoint${m.slot}` },
      m.endpoint, m.model, true).endpoint);

    // ---------------------------------------------------------------- helpers for the functions

    const logGroup = (groupId: string, fn: string) => this.pin(new logs.LogGroup(this, groupId, {
      logGroupName: `/aws/lambda/${name}-${fn}`,
      retention: s.logRetentionDays as logs.RetentionDays,
      // The template's log groups go with the stack (CloudFormation's default).
      removalPolicy: RemovalPolicy.DESTROY,
    }), groupId);

    // Inline policies written out as the template writes them: iam.PolicyDocument would merge
    // and reorder statements under the app's @aws-cdk/aws-iam:minimizePolicies flag.
    const role = (roleId: string, policyName: string, statements: Statement[]) => {
      const created = new iam.Role(this, roleId, { assumedBy: LAMBDA });
      (created.node.defaultChild as iam.CfnRole).policies = [
        { policyName, policyDocument: { Version: '2012-10-17', Statement: statements } },
      ];
      return this.pin(created, roleId);
    };

    const writeLogs = (...groups: logs.LogGroup[]) => allow(['logs:CreateLogStream', 'logs:PutLogEvents'],
      groups.map((g) => g.logGroupArn));

    const fn = (fnId: string, binary: string, options: {
      description: string; role: iam.IRole; logGroup: logs.LogGroup; timeoutSecs: number;
      environment: Record<string, string | undefined>; reservedConcurrentExecutions?: number;
      layers?: lambda.ILayerVersion[];
    }) => {
      const created = new lambda.Function(this, fnId, {
        // No functionName: CloudFormation names it (stack-LogicalId-random, at most 64), so a stack
        // name of any length deploys.
        description: options.description,
        role: options.role,
        runtime: lambda.Runtime.PROVIDED_AL2023,
        architecture: lambda.Architecture.ARM_64,
        handler: 'bootstrap',
        code: lambda.Code.fromAsset(functionCode(functionsDir, binary)),
        // Each function peaks under 20 MB resident (BENCHMARKS.md), so the smallest size is
        // enough; raising it buys CPU (Lambda scales CPU with memory), not room.
        memorySize: 128,
        timeout: Duration.seconds(options.timeoutSecs),
        reservedConcurrentExecutions: options.reservedConcurrentExecutions,
        layers: options.layers,
        logGroup: options.logGroup,
        loggingFormat: lambda.LoggingFormat.JSON,
        applicationLogLevelV2: s.applicationLogLevel as lambda.ApplicationLogLevel,
        systemLogLevelV2: s.systemLogLevel as lambda.SystemLogLevel,
        environment: definedOnly({ METRICS_NAMESPACE: namespace, ...options.environment }),
      });
      // Set on the resource: the function's own `tracing` prop would also grant X-Ray in
      // PassThrough mode, where the template grants it only for Active.
      (created.node.defaultChild as lambda.CfnFunction).tracingConfig = { mode: s.tracingMode };
      return this.pin(created, fnId);
    };

    // SNS and EventBridge invoke asynchronously: Lambda retries, then the failure destination.
    const onFailureToDlq = (configId: string, target: lambda.Function) => this.pin(new lambda.CfnEventInvokeConfig(this, configId, {
      functionName: target.functionName,
      qualifier: '$LATEST',
      maximumRetryAttempts: 2,
      maximumEventAgeInSeconds: 21600,
      destinationConfig: { onFailure: { destination: dlq.queueArn } },
    }), configId);

    // ---------------------------------------------------------------- completion events (optional)
    // Each recorded job outcome is put on the bus (EVENT_BUS_NAME) after its write; rules route it on.

    const eventBus = s.completionEvents === 'stack-bus'
      ? this.pin(new events.CfnEventBus(this, 'CompletionEventBus', { name: `${name}-completions` }), 'CompletionEventBus')
      : undefined;
    const eventBusName = s.completionEvents === 'none' ? undefined : eventBus ? eventBus.ref : 'default';
    const putEvents = s.completionEvents === 'none'
      ? []
      : [allow(['events:PutEvents'], [eventBus ? eventBus.attrArn : `arn:${partition}:events:${region}:${account}:event-bus/default`])];
    if (given(s.completionWebhookUrl) && eventBusName) {
      // EventBridge signs nothing: the key goes in a header from the connection's secret.
      const connection = this.pin(new events.CfnConnection(this, 'CompletionWebhookConnection', {
        description: `The completion webhook of stack ${name}.`,
        authorizationType: 'API_KEY',
        authParameters: {
          apiKeyAuthParameters: { apiKeyName: s.completionWebhookApiKeyName, apiKeyValue: `{{resolve:secretsmanager:${s.completionWebhookApiKeySecret}:SecretString}}` },
        },
      }), 'CompletionWebhookConnection');
      const destination = this.pin(new events.CfnApiDestination(this, 'CompletionWebhookDestination', {
        connectionArn: connection.attrArn,
        invocationEndpoint: s.completionWebhookUrl,
        httpMethod: 'POST',
        invocationRateLimitPerSecond: 10,
      }), 'CompletionWebhookDestination');
      const webhookRole = new iam.Role(this, 'CompletionWebhookRole', {
        assumedBy: new iam.ServicePrincipal('events.amazonaws.com'),
      });
      (webhookRole.node.defaultChild as iam.CfnRole).policies = [{
        policyName: 'completion-webhook',
        policyDocument: { Version: '2012-10-17', Statement: [allow(['events:InvokeApiDestination'], [destination.attrArn])] },
      }];
      this.pin(webhookRole, 'CompletionWebhookRole');
      const webhookDlq = queue('CompletionWebhookDLQ');
      const webhookRule = this.pin(new events.CfnRule(this, 'CompletionWebhookRule', {
        description: 'Every completion event of this stack\'s jobs, to the webhook.',
        eventBusName,
        eventPattern: { 'source': ['mcp.async-jobs'], 'detail-type': ['Async Job Completed', 'Async Job Failed'] },
        targets: [{
          id: 'webhook',
          arn: destination.attrArn,
          roleArn: webhookRole.roleArn,
          retryPolicy: { maximumRetryAttempts: 185, maximumEventAgeInSeconds: 86400 },
          deadLetterConfig: { arn: webhookDlq.queueArn },
        }],
      }), 'CompletionWebhookRule');
      this.pin(new sqs.CfnQueuePolicy(this, 'CompletionWebhookDLQPolicy', {
        queues: [webhookDlq.queueUrl],
        policyDocument: {
          Version: '2012-10-17',
          Statement: [{
            Effect: 'Allow',
            Principal: { Service: 'events.amazonaws.com' },
            Action: 'sqs:SendMessage',
            Resource: webhookDlq.queueArn,
            Condition: { ArnEquals: { 'aws:SourceArn': webhookRule.attrArn } },
          }],
        },
      }), 'CompletionWebhookDLQPolicy');
      this.completionWebhookDlq = webhookDlq;
    }
    this.completionEventBusName = eventBusName;

    // ---------------------------------------------------------------- notification-handler

    const notificationHandlerLogs = logGroup('NotificationHandlerLogGroup', 'notification-handler');
    let bufferQueue: sqs.Queue | undefined;
    let bufferDlq: sqs.Queue | undefined;
    if (s.useSqsBuffer) {
      bufferDlq = queue('NotificationBufferDLQ');
      bufferQueue = queue('NotificationBufferQueue', {
        visibilityTimeout: Duration.seconds(180), // six times the function timeout
        deadLetterQueue: { queue: bufferDlq, maxReceiveCount: 5 },
      });
    }
    const notificationHandlerRole = role('NotificationHandlerRole', 'notification-handler', [
      writeLogs(notificationHandlerLogs),
      ...tracing(),
      allow(['dynamodb:UpdateItem'], [this.resultsTable.tableArn]),
      allow(['s3:GetObject'], readableOutcomes),
      ...decryptOutputs(),
      allow(['sqs:SendMessage'], [dlq.queueArn]),
      ...(bufferQueue
        ? [allow(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'], [bufferQueue.queueArn])]
        : []),
      ...putEvents,
    ]);
    this.notificationHandler = fn('NotificationHandlerFunction', 'notification-handler', {
      description: 'Records SageMaker async inference outcomes in the results table.',
      role: notificationHandlerRole,
      logGroup: notificationHandlerLogs,
      timeoutSecs: 30,
      environment: {
        RESULTS_TABLE: this.resultsTable.tableName,
        RESULT_TTL_SECS: String(s.resultTtlSecs),
        INLINE_RESULT_MAX_BYTES: String(s.inlineResultMaxBytes),
        EVENT_BUS_NAME: eventBusName,
      },
    });
    const notificationHandler = this.notificationHandler;
    onFailureToDlq('NotificationHandlerInvokeConfig', notificationHandler);

    const topics: Array<[string, string]> = [['Success', this.successTopicArn], ['Error', this.errorTopicArn]];
    if (bufferQueue) {
      this.pin(new sqs.CfnQueuePolicy(this, 'NotificationBufferQueuePolicy', {
        queues: [bufferQueue.queueUrl],
        policyDocument: {
          Version: '2012-10-17',
          Statement: [{
            Effect: 'Allow',
            Principal: { Service: 'sns.amazonaws.com' },
            Action: 'sqs:SendMessage',
            Resource: bufferQueue.queueArn,
            Condition: { ArnEquals: { 'aws:SourceArn': topics.map(([, arn]) => arn) } },
          }],
        },
      }), 'NotificationBufferQueuePolicy');
      for (const [which, topicArn] of topics) {
        this.pin(new sns.CfnSubscription(this, `${which}TopicBufferSubscription`, {
          topicArn, protocol: 'sqs', endpoint: bufferQueue.queueArn,
        }), `${which}TopicBufferSubscription`);
      }
      this.pin(new lambda.CfnEventSourceMapping(this, 'NotificationBufferEventSource', {
        eventSourceArn: bufferQueue.queueArn,
        functionName: notificationHandler.functionName,
        batchSize: s.sqsBatchSize,
        maximumBatchingWindowInSeconds: s.sqsBatchingWindowSecs,
        functionResponseTypes: ['ReportBatchItemFailures'],
      }), 'NotificationBufferEventSource');
    } else {
      for (const [which, topicArn] of topics) {
        this.pin(new sns.CfnSubscription(this, `${which}TopicSubscription`, {
          topicArn, protocol: 'lambda', endpoint: notificationHandler.functionArn,
        }), `${which}TopicSubscription`);
        this.pin(new lambda.CfnPermission(this, `${which}TopicInvokePermission`, {
          functionName: notificationHandler.functionName,
          action: 'lambda:InvokeFunction',
          principal: 'sns.amazonaws.com',
          sourceArn: topicArn,
        }), `${which}TopicInvokePermission`);
      }
    }

    // ---------------------------------------------------------------- pipeline-router

    // Only with a pipeline: an inference-only stack has no router, no rule, no completion queue.
    const pipelineResultsQueue = this.pipelineResultsQueue;
    const callbackQueue = this.pipelineCallbackQueue;
    if (hasPipeline && pipelineResultsQueue && callbackQueue) {
      const pipelineRouterLogs = logGroup('PipelineRouterLogGroup', 'pipeline-router');
      const routerRunActions = ['sagemaker:DescribePipelineExecution', 'sagemaker:ListPipelineExecutionSteps'];
      const pipelineRouterRole = role('PipelineRouterRole', 'pipeline-router', [
        writeLogs(pipelineRouterLogs),
        ...tracing(),
        allow(['dynamodb:UpdateItem', 'dynamodb:BatchGetItem'], [this.pipelineResultsTable.tableArn]),
        allow(['sqs:SendMessage'], [pipelineResultsQueue.queueArn, dlq.queueArn]),
        // The callback queue's event source: what the pipelines' CallbackSteps ask.
        allow(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'], [callbackQueue.queueArn]),
        // Describes a run; lists its steps (a callback message's token must be held by the
        // run's waiting CallbackStep).
        allow(routerRunActions, [s.narrowEventsToPipeline
          ? `${pipelineArn}/execution/*`
          : `arn:${partition}:sagemaker:${region}:${account}:pipeline/*/execution/*`]),
        // The catalog's pipelines' runs.
        ...(s.narrowEventsToPipeline && catalogExecutionArns.length > 0
          ? [allow(routerRunActions, catalogExecutionArns)] : []),
      ]);
      const router = fn('PipelineRouterFunction', 'pipeline-router', {
        description: 'Records SageMaker pipeline run outcomes and sends them to SQS.',
        role: pipelineRouterRole,
        logGroup: pipelineRouterLogs,
        timeoutSecs: 30,
        environment: {
          PIPELINE_RESULTS_TABLE: this.pipelineResultsTable.tableName,
          PIPELINE_RESULTS_QUEUE_URL: pipelineResultsQueue.queueUrl,
          RESULT_TTL_SECS: String(s.resultTtlSecs),
        },
      });
      this.pipelineRouter = router;
      onFailureToDlq('PipelineRouterInvokeConfig', router);

      const rule = this.pin(new events.CfnRule(this, 'PipelineStatusRule', {
        description: 'SageMaker pipeline runs reaching a terminal status, to pipeline-router.',
        eventPattern: {
          'source': ['aws.sagemaker'],
          'detail-type': ['SageMaker Model Building Pipeline Execution Status Change'],
          'detail': {
            currentPipelineExecutionStatus: ['Succeeded', 'Failed', 'Stopped', 'CompletedWithFailures'],
            ...(s.narrowEventsToPipeline ? { pipelineArn: [pipelineArn, ...catalogPipelineArns] } : {}),
          },
        },
        targets: [{
          id: 'pipeline-router',
          arn: router.functionArn,
          retryPolicy: { maximumRetryAttempts: 185, maximumEventAgeInSeconds: 86400 },
          deadLetterConfig: { arn: dlq.queueArn },
        }],
      }), 'PipelineStatusRule');
      this.pin(new lambda.CfnPermission(this, 'PipelineStatusRulePermission', {
        functionName: router.functionName,
        action: 'lambda:InvokeFunction',
        principal: 'events.amazonaws.com',
        sourceArn: rule.attrArn,
      }), 'PipelineStatusRulePermission');
      this.pin(new lambda.CfnEventSourceMapping(this, 'PipelineCallbackEventSource', {
        eventSourceArn: callbackQueue.queueArn,
        functionName: router.functionName,
        batchSize: 10,
        functionResponseTypes: ['ReportBatchItemFailures'],
      }), 'PipelineCallbackEventSource');

      this.pin(new sqs.CfnQueuePolicy(this, 'AsyncFailureDLQPolicy', {
        queues: [dlq.queueUrl],
        policyDocument: {
          Version: '2012-10-17',
          Statement: [{
            // EventBridge puts events it could not deliver to pipeline-router here.
            Effect: 'Allow',
            Principal: { Service: 'events.amazonaws.com' },
            Action: 'sqs:SendMessage',
            Resource: dlq.queueArn,
            Condition: { ArnEquals: { 'aws:SourceArn': rule.attrArn } },
          }],
        },
      }), 'AsyncFailureDLQPolicy');
    }

    // ------------------------------------------- a Cognito user pool as the authorization server (optional)
    // For teams without an identity provider. Only an administrator creates users: a pool open to
    // sign-up would let anyone start SageMaker work.

    if (createCognito) {
      const pool = this.pin(new cognito.CfnUserPool(this, 'UserPool', {
        userPoolName: `${name}-mcp-users`,
        usernameAttributes: ['email'],
        autoVerifiedAttributes: ['email'],
        usernameConfiguration: { caseSensitive: false },
        adminCreateUserConfig: { allowAdminCreateUserOnly: true },
        accountRecoverySetting: { recoveryMechanisms: [{ name: 'verified_email', priority: 1 }] },
        policies: {
          passwordPolicy: {
            minimumLength: 12,
            requireLowercase: true,
            requireUppercase: true,
            requireNumbers: true,
            requireSymbols: false,
            temporaryPasswordValidityDays: 7,
          },
        },
        mfaConfiguration: 'OPTIONAL',
        enabledMfas: ['SOFTWARE_TOKEN_MFA'],
        // The pool holds sign-in accounts only; jobs and runs live in the tables (and expire).
        deletionProtection: 'INACTIVE',
      }), 'UserPool');
      this.userPool = pool;
      this.pin(new cognito.CfnUserPoolDomain(this, 'UserPoolDomain', {
        userPoolId: pool.ref,
        domain: s.userPoolDomainPrefix,
        managedLoginVersion: 2,
      }), 'UserPoolDomain');
      // The scopes mcp-tools checks: mcp-tools/jobs.read and mcp-tools/jobs.write.
      const resourceServer = this.pin(new cognito.CfnUserPoolResourceServer(this, 'UserPoolResourceServer', {
        userPoolId: pool.ref,
        identifier: 'mcp-tools',
        name: `${name} MCP tools`,
        scopes: [
          { scopeName: 'jobs.read', scopeDescription: 'Read your jobs and training runs' },
          { scopeName: 'jobs.write', scopeDescription: 'Start and cancel jobs and training runs' },
        ],
      }), 'UserPoolResourceServer');
      // A public client (MCP clients keep no secret): authorization code with PKCE.
      const client = this.pin(new cognito.CfnUserPoolClient(this, 'UserPoolClient', {
        userPoolId: pool.ref,
        clientName: `${name}-mcp-clients`,
        generateSecret: false,
        allowedOAuthFlowsUserPoolClient: true,
        allowedOAuthFlows: ['code'],
        allowedOAuthScopes: ['openid', 'mcp-tools/jobs.read', 'mcp-tools/jobs.write'],
        callbackUrLs: s.oauthCallbackUrls,
        supportedIdentityProviders: ['COGNITO'],
        explicitAuthFlows: ['ALLOW_USER_SRP_AUTH', 'ALLOW_REFRESH_TOKEN_AUTH'],
        preventUserExistenceErrors: 'ENABLED',
        enableTokenRevocation: true,
        accessTokenValidity: 60,
        idTokenValidity: 60,
        refreshTokenValidity: 30,
        tokenValidityUnits: { accessToken: 'minutes', idToken: 'minutes', refreshToken: 'days' },
      }), 'UserPoolClient');
      // Its scopes exist only once the resource server does.
      client.addResourceDependency(resourceServer);
      this.userPoolClient = client;
      // Managed login (version 2) shows its pages only for an app client with a style; Cognito's own.
      this.pin(new cognito.CfnManagedLoginBranding(this, 'UserPoolManagedLoginBranding', {
        userPoolId: pool.ref,
        clientId: client.ref,
        useCognitoProvidedValues: true,
      }), 'UserPoolManagedLoginBranding');
    }
    const cognitoIssuer = this.userPool ? `https://cognito-idp.${region}.amazonaws.com/${this.userPool.ref}` : undefined;

    // ---------------------------------------------------------------- mcp-tools (and the Gateway target's log group)

    const mcpToolsLogs = logGroup('McpToolsLogGroup', 'mcp-tools');
    const gatewayTargetLogs = gateway ? logGroup('GatewayTargetLogGroup', 'gateway-target') : undefined;
    const mcpToolsRole = role('McpToolsRole', 'mcp-tools', [
      writeLogs(mcpToolsLogs, ...(gatewayTargetLogs ? [gatewayTargetLogs] : [])),
      ...tracing(),
      allow(['dynamodb:PutItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:BatchGetItem'],
        [this.resultsTable.tableArn]),
      allow(['dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'], [this.pipelineResultsTable.tableArn]),
      allow(['s3:PutObject'], [`${bucketArn}/inputs/*`]),
      // The inputs it writes under a bucket key: S3 asks KMS for a data key as this role.
      ...(bucketKeyArn ? [allow(['kms:GenerateDataKey'], [bucketKeyArn])] : []),
      // Presigned result URLs are signed with this role's credentials, and check_job_status
      // reads an output or failure object itself when its notification did not arrive.
      allow(['s3:GetObject'], readableOutcomes),
      ...decryptOutputs(),
      // DescribeEndpoint: whether the endpoint is at zero instances when a job is submitted.
      allow(['sagemaker:InvokeEndpointAsync', 'sagemaker:DescribeEndpoint'],
        [`arn:${partition}:sagemaker:${region}:${account}:endpoint/${s.asyncEndpointName}`]),
      // The training tools, only with a pipeline.
      ...(hasPipeline ? [
        allow(['sagemaker:StartPipelineExecution'], [pipelineArn]),
        allow(['sagemaker:DescribePipelineExecution', 'sagemaker:ListPipelineExecutionSteps',
          'sagemaker:DescribePipelineDefinitionForExecution', 'sagemaker:StopPipelineExecution',
          'sagemaker:SendPipelineExecutionStepSuccess', 'sagemaker:SendPipelineExecutionStepFailure'],
          [`${pipelineArn}/execution/*`]),
      ] : []),
      // The tool catalog's endpoints and pipelines beside those, each by name.
      ...(catalogEndpoints.length > 0 ? [allow(['sagemaker:InvokeEndpointAsync', 'sagemaker:DescribeEndpoint'],
        catalogEndpoints.map((e) => `${sagemakerArn}:endpoint/${e}`))] : []),
      ...(catalogPipelines.length > 0 ? [
        allow(['sagemaker:StartPipelineExecution'], catalogPipelineArns),
        allow(['sagemaker:DescribePipelineExecution', 'sagemaker:ListPipelineExecutionSteps',
          'sagemaker:DescribePipelineDefinitionForExecution', 'sagemaker:StopPipelineExecution',
          'sagemaker:SendPipelineExecutionStepSuccess', 'sagemaker:SendPipelineExecutionStepFailure'], catalogExecutionArns),
      ] : []),
      // get_model_provenance: a model package and the lineage around it;
      // approve_model_package: its approval (the groups are the pipelines' own, unknown here).
      allow(['sagemaker:DescribeModelPackage', 'sagemaker:UpdateModelPackage'], [`arn:${partition}:sagemaker:${region}:${account}:model-package/*`]),
      allow(['sagemaker:DescribeArtifact'], [`arn:${partition}:sagemaker:${region}:${account}:artifact/*`]),
      lineageLists(),
      // An outcome a status check finds in S3 is announced as a notification's is.
      ...putEvents,
    ]);
    const toolsEnvironment = {
      RESULTS_TABLE: this.resultsTable.tableName,
      PIPELINE_RESULTS_TABLE: this.pipelineResultsTable.tableName,
      IO_BUCKET: s.ioBucketName,
      ASYNC_ENDPOINT_NAME: s.asyncEndpointName,
      PIPELINE_NAME: s.pipelineName,
      TOOL_CATALOG: toolCatalog ? `/opt/tool-catalog/${toolCatalog.fileName}` : '',
      RESULT_TTL_SECS: String(s.resultTtlSecs),
      INLINE_RESULT_MAX_BYTES: String(s.inlineResultMaxBytes),
      PIPELINE_PARAMETERS: s.pipelineParameters,
      DEFAULT_REQUEST_TTL_SECS: String(s.defaultRequestTtlSecs),
      INLINE_INPUT_MAX_BYTES: String(s.inlineInputMaxBytes),
      TRAINING_INPUT_PREFIXES: given(s.trainingInputPrefixes) ? s.trainingInputPrefixes : `s3://${s.ioBucketName}/train/`,
      TRAINING_INSTANCE_TYPES: s.trainingInstanceTypes,
      CALLER_SUBMITS_PER_MINUTE: String(s.callerSubmitsPerMinute),
      CALLER_RUNS_PER_HOUR: String(s.callerRunsPerHour),
      CALLER_WAITS_MAX: String(s.callerWaitsMax),
      CALLER_READS_PER_MINUTE: String(s.callerReadsPerMinute),
      APPROVAL_GATE: String(s.approvalGate),
      EVENT_BUS_NAME: eventBusName,
    };
    // The tool catalog, at /opt/tool-catalog/<file> in mcp-tools and gateway-target.
    const catalogLayers = toolCatalog ? [this.pin(new lambda.LayerVersion(this, 'ToolCatalogLayer', {
      // Named after the stack: stacks keep their own.
      layerVersionName: `${name}-catalog`,
      description: 'The tool catalog (ToolCatalog) mcp-tools and gateway-target read at cold start.',
      code: lambda.Code.fromAsset(catalogLayerDir(toolCatalog.fileName, toolCatalog.content)),
      compatibleArchitectures: [lambda.Architecture.ARM_64],
      compatibleRuntimes: [lambda.Runtime.PROVIDED_AL2023],
      // A new catalog is a new version; the functions move to it, and nothing else uses the old.
      removalPolicy: RemovalPolicy.DESTROY,
    }), 'ToolCatalogLayer')] : undefined;
    // Only the chosen auth mode's variables: oauth with an issuer or the user pool, else bearer
    // with auth type NONE, else iam.
    const oauthSetting = (value: string) => (oauthAuth && given(value) ? value : undefined);
    this.mcpTools = fn('McpToolsFunction', 'mcp-tools', {
      description: 'MCP server (submit_job, check_job_status, training tools) on a Function URL.',
      role: mcpToolsRole,
      logGroup: mcpToolsLogs,
      // A plain wait is 20 s at most; a streamed one (with a progress token) up to this less 10 s.
      timeoutSecs: s.toolsTimeoutSecs,
      reservedConcurrentExecutions: s.toolsReservedConcurrency > 0 ? s.toolsReservedConcurrency : undefined,
      layers: catalogLayers,
      environment: {
        AUTH_MODE: oauthAuth ? 'oauth' : bearerAuth ? 'bearer' : 'iam',
        MCP_BEARER_TOKEN_SHA256: bearerAuth && given(s.bearerTokenSha256) ? s.bearerTokenSha256 : undefined,
        MCP_BEARER_TOKENS: bearerAuth && given(s.bearerTokens) ? s.bearerTokens : undefined,
        OAUTH_ISSUER: cognitoIssuer ?? oauthSetting(s.oauthIssuer),
        OAUTH_AUDIENCE: oauthSetting(s.oauthAudience),
        OAUTH_JWKS_URI: oauthSetting(s.oauthJwksUri),
        OAUTH_READ_SCOPE: createCognito ? 'mcp-tools/jobs.read' : oauthSetting(s.oauthReadScope),
        OAUTH_WRITE_SCOPE: createCognito ? 'mcp-tools/jobs.write' : oauthSetting(s.oauthWriteScope),
        // Cognito's access tokens carry client_id and no aud.
        OAUTH_CLIENT_IDS: this.userPoolClient ? this.userPoolClient.ref : oauthSetting(s.oauthClientIds),
        MCP_ALLOWED_ORIGINS: s.allowedOrigins,
        APPROVERS: s.approvers,
        ...toolsEnvironment,
        // The timeout: a reservation older than it (plus a margin) is a crashed submission.
        FUNCTION_TIMEOUT_SECS: String(s.toolsTimeoutSecs),
      },
    });
    // Streamed: progress notifications reach the client while a tool waits.
    this.mcpToolsUrl = this.pin(new lambda.CfnUrl(this, 'McpToolsFunctionUrl', {
      targetFunctionArn: this.mcpTools.functionName,
      authType: s.functionUrlAuthType,
      invokeMode: 'RESPONSE_STREAM',
    }), 'McpToolsFunctionUrl');
    // With auth type NONE anyone may reach the URL and the function checks the token itself; a
    // Function URL created since October 2025 needs both statements.
    if (s.functionUrlAuthType === 'NONE') {
      this.pin(new lambda.CfnPermission(this, 'McpToolsUrlPublicInvoke', {
        action: 'lambda:InvokeFunctionUrl',
        functionName: this.mcpTools.functionName,
        principal: '*',
        functionUrlAuthType: 'NONE',
      }), 'McpToolsUrlPublicInvoke');
      this.pin(new lambda.CfnPermission(this, 'McpToolsUrlPublicInvokeViaUrl', {
        action: 'lambda:InvokeFunction',
        functionName: this.mcpTools.functionName,
        principal: '*',
        invokedViaFunctionUrl: true,
      }), 'McpToolsUrlPublicInvokeViaUrl');
    }

    // For callers in AWS_IAM mode: attach it to the caller's user or role. A Function URL created
    // since October 2025 needs both actions in the caller's identity policy.
    this.callerPolicy = this.pin(new iam.CfnManagedPolicy(this, 'McpToolsCallerPolicy', {
      description: `Lets a caller use the MCP server of stack ${name} through its Function URL (AWS_IAM auth).`,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [
          { Effect: 'Allow', Action: 'lambda:InvokeFunctionUrl', Resource: this.mcpTools.functionArn },
          {
            Effect: 'Allow',
            Action: 'lambda:InvokeFunction',
            Resource: this.mcpTools.functionArn,
            Condition: { Bool: { 'lambda:InvokedViaFunctionUrl': 'true' } },
          },
        ],
      },
    }), 'McpToolsCallerPolicy');

    // ------------------------------------------- the same tools behind AgentCore Gateway (optional)
    // The Gateway invokes gateway-target with a tool's arguments; it serves the tools through the
    // same code as mcp-tools and runs with the same role.

    if (gatewayTargetLogs) {
      const target = fn('GatewayTargetFunction', 'gateway-target', {
        description: 'The MCP tools (submit_job, check_job_status, training tools) as an AgentCore Gateway Lambda target.',
        role: mcpToolsRole,
        logGroup: gatewayTargetLogs,
        timeoutSecs: GATEWAY_TARGET_TIMEOUT_SECS,
        layers: catalogLayers,
        environment: { ...toolsEnvironment, FUNCTION_TIMEOUT_SECS: String(GATEWAY_TARGET_TIMEOUT_SECS) },
      });
      this.gatewayTarget = target;
      const permission = this.pin(new lambda.CfnPermission(this, 'GatewayTargetInvokePermission', {
        action: 'lambda:InvokeFunction',
        functionName: target.functionArn,
        principal: s.agentCoreGatewayRoleArn,
      }), 'GatewayTargetInvokePermission');
      const gatewayTarget = this.pin(new agentcore.CfnGatewayTarget(this, 'GatewayTarget', {
        gatewayIdentifier: s.agentCoreGatewayId,
        name: s.agentCoreTargetName,
        description: 'Long-running ML work on SageMaker (async inference, training pipeline runs).',
        credentialProviderConfigurations: [{ credentialProviderType: 'GATEWAY_IAM_ROLE' }],
        targetConfiguration: {
          mcp: {
            lambda: {
              lambdaArn: target.functionArn,
              toolSchema: { inlinePayload: toolSchema(props.toolSchemaFile ?? path.join(REPO_ROOT, 'infra', 'gateway-tool-schema.json')) },
            },
          },
        },
      }), 'GatewayTarget');
      gatewayTarget.addResourceDependency(permission);
    }

    // ---------------------------------------------------------------- alarms

    const errorsAlarm = (alarmId: string, description: string, target: lambda.Function) =>
      this.depthOrErrorsAlarm(alarmId, description, 'AWS/Lambda', 'Errors', 'FunctionName', target.functionName, 'Sum', alarmActions);
    errorsAlarm('NotificationHandlerErrorsAlarm',
      'notification-handler failed on a notification (it is retried, then sent to the failure DLQ).', notificationHandler);
    if (this.pipelineRouter) {
      errorsAlarm('PipelineRouterErrorsAlarm',
        'pipeline-router failed on a status change (it is retried, then sent to the failure DLQ).', this.pipelineRouter);
    }
    errorsAlarm('McpToolsErrorsAlarm',
      'mcp-tools invocations failed (tool errors are not function errors; these are crashes or timeouts).', this.mcpTools);
    const depthAlarm = (alarmId: string, description: string, waiting: sqs.Queue) =>
      this.depthOrErrorsAlarm(alarmId, description, 'AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName',
        waiting.queueName, 'Maximum', alarmActions);
    depthAlarm('AsyncFailureDLQDepthAlarm',
      'Notifications or pipeline events that could not be recorded are waiting in the failure DLQ.', dlq);
    if (this.pipelineResultsDlq) {
      depthAlarm('PipelineResultsDLQDepthAlarm',
        'Completion messages the consumer could not process are waiting in the DLQ.', this.pipelineResultsDlq);
    }
    if (this.pipelineCallbackDlq) {
      depthAlarm('PipelineCallbackDLQDepthAlarm',
        'Questions of pipeline CallbackSteps that could not be recorded are waiting in the DLQ.', this.pipelineCallbackDlq);
    }
    if (bufferDlq) {
      depthAlarm('NotificationBufferDLQDepthAlarm', 'Buffered notifications failed five times and wait in the buffer DLQ.', bufferDlq);
    }
    if (this.completionWebhookDlq) {
      depthAlarm('CompletionWebhookDLQDepthAlarm', 'Completion events the webhook did not take within a day wait in its DLQ.',
        this.completionWebhookDlq);
    }

    const own = (id: string, metricName: string, fnName: string): cloudwatch.CfnAlarm.MetricDataQueryProperty => ({
      id,
      returnData: false,
      metricStat: {
        metric: { namespace, metricName, dimensions: [{ name: 'Function', value: fnName }] },
        period: 900,
        stat: 'Sum',
      },
    });
    // A job pending past its deadline, or an outcome found in S3 by a status check, means
    // SageMaker's notifications are not reaching notification-handler.
    this.pin(new cloudwatch.CfnAlarm(this, 'OutcomesNotArrivingAlarm', {
      alarmDescription: 'Jobs are finishing without their SNS notification being recorded (a status check found one '
        + 'pending past its deadline, or found its outcome in S3). Check the topics\' subscriptions and the failure DLQ, '
        + 'then run make redrive.',
      metrics: [
        {
          id: 'missing',
          label: 'jobs probably lost or reconciled from S3',
          returnData: true,
          expression: 'FILL(lost1, 0) + FILL(lost2, 0) + FILL(rec1, 0) + FILL(rec2, 0)',
        },
        own('lost1', 'JobsProbablyLost', 'mcp-tools'),
        own('lost2', 'JobsProbablyLost', 'gateway-target'),
        own('rec1', 'OutcomesReconciled', 'mcp-tools'),
        own('rec2', 'OutcomesReconciled', 'gateway-target'),
      ],
      evaluationPeriods: 1,
      threshold: 1,
      comparisonOperator: 'GreaterThanOrEqualToThreshold',
      treatMissingData: 'notBreaching',
      alarmActions,
    }), 'OutcomesNotArrivingAlarm');

    const outcomes = 'FILL(ok, 0) + FILL(failed, 0) + FILL(refused, 0) + FILL(gwrefused, 0)';
    const failures = 'FILL(failed, 0) + FILL(refused, 0) + FILL(gwrefused, 0)';
    this.pin(new cloudwatch.CfnAlarm(this, 'JobFailureRateAlarm', {
      alarmDescription: 'More than FailureRateThreshold of job outcomes in 15 minutes (at least 5) were failures: the '
        + 'model or its input is failing. Read failure_reason in check_job_status or the results table.',
      metrics: [
        {
          id: 'rate',
          label: 'failed share of outcomes',
          returnData: true,
          expression: `IF(${outcomes} >= 5, (${failures}) / (${outcomes}), 0)`,
        },
        own('ok', 'JobsCompleted', 'notification-handler'),
        own('failed', 'JobsFailed', 'notification-handler'),
        own('refused', 'JobsFailed', 'mcp-tools'),
        own('gwrefused', 'JobsFailed', 'gateway-target'),
      ],
      evaluationPeriods: 1,
      threshold: s.failureRateThreshold,
      comparisonOperator: 'GreaterThanThreshold',
      treatMissingData: 'notBreaching',
      alarmActions,
    }), 'JobFailureRateAlarm');

    // ---------------------------------------------------------------- dashboard

    this.pin(new cloudwatch.CfnDashboard(this, 'Dashboard', {
      dashboardName: `${name}-jobs`,
      dashboardBody: Stack.of(this).toJsonString(dashboardBody({
        namespace,
        region,
        notificationHandler: notificationHandler.functionName,
        // An inference-only stack has neither: its widgets show no data.
        pipelineRouter: this.pipelineRouter ? this.pipelineRouter.functionName : 'none',
        mcpTools: this.mcpTools.functionName,
        asyncFailureDlq: dlq.queueName,
        pipelineResultsDlq: this.pipelineResultsDlq ? this.pipelineResultsDlq.queueName : 'none',
      })),
    }), 'Dashboard');

    // ---------------------------------------------------------------- outputs

    const output = (outputId: string, value: string, description?: string) =>
      this.pin(new CfnOutput(this, `Output${outputId}`, { value, description }), outputId);
    if (this.completionEventBusName) {
      output('CompletionEventBusName', this.completionEventBusName,
        'The EventBridge bus each recorded job outcome is announced on (source mcp.async-jobs).');
    }
    if (this.completionWebhookDlq) {
      output('CompletionWebhookDLQUrl', this.completionWebhookDlq.queueUrl, 'Completion events the webhook did not take within a day.');
    }
    output('Dashboard', `https://${region}.console.aws.amazon.com/cloudwatch/home?region=${region}#dashboards:name=${name}-jobs`,
      'The CloudWatch dashboard of jobs, runs, tool calls and the functions.');
    output('McpFunctionUrl', this.mcpToolsUrl.attrFunctionUrl, 'The MCP server; point clients at this URL followed by mcp.');
    if (this.gatewayTarget) {
      output('GatewayTargetFunctionArn', this.gatewayTarget.functionArn, 'The AgentCore Gateway target\'s function.');
    }
    output('ResultsTableName', this.resultsTable.tableName);
    output('PipelineResultsTableName', this.pipelineResultsTable.tableName);
    if (this.pipelineResultsQueue) {
      output('PipelineResultsQueueUrl', this.pipelineResultsQueue.queueUrl);
    }
    if (this.pipelineCallbackQueue) {
      output('PipelineCallbackQueueUrl', this.pipelineCallbackQueue.queueUrl,
        'The SqsQueueUrl of a CallbackStep that asks a person through MCP (docs/approvals.md).');
    }
    output('AlarmTopic', this.alarmTopicArn, 'The SNS topic the alarms notify (AlarmTopicArn, or the one the stack created).');
    output('AsyncFailureDLQUrl', dlq.queueUrl, 'Notifications and pipeline events that failed after retries.');
    output('SuccessTopic', this.successTopicArn,
      'The endpoint\'s NotificationConfig SuccessTopic (set by the stack with ModelName, else by make wire-endpoint).');
    output('ErrorTopic', this.errorTopicArn,
      'The endpoint\'s NotificationConfig ErrorTopic (set by the stack with ModelName, else by make wire-endpoint).');
    output('S3OutputPath', s3OutputPath, 'The endpoint\'s S3OutputPath, under the prefix the functions may read.');
    output('S3FailurePath', s3FailurePath, 'The endpoint\'s S3FailurePath, under the prefix the functions may read.');
    output('McpToolsCallerPolicyArn', this.callerPolicy.ref, 'Attach to IAM callers (AWS_IAM auth) of the MCP server; '
      + 'grants lambda:InvokeFunctionUrl and lambda:InvokeFunction on mcp-tools.');
    if (oauthAuth) {
      output('OAuthIssuerUrl', cognitoIssuer ?? s.oauthIssuer,
        'The authorization server whose access tokens mcp-tools accepts (OAUTH_ISSUER).');
      output('ProtectedResourceMetadataUrl', `${this.mcpToolsUrl.attrFunctionUrl}.well-known/oauth-protected-resource/mcp`,
        'The MCP server\'s OAuth protected-resource metadata (RFC 9728), where clients find the authorization server.');
    }
    if (this.userPool && this.userPoolClient) {
      output('UserPoolId', this.userPool.ref, 'The Cognito user pool; create its users with aws cognito-idp admin-create-user.');
      output('UserPoolClientId', this.userPoolClient.ref,
        'The public app client MCP clients sign in with (no secret; give it to Claude Code as --client-id).');
      output('UserPoolDomainUrl', `https://${s.userPoolDomainPrefix}.auth.${region}.amazoncognito.com`,
        'The managed login domain users sign in at.');
    }
    if (endpointConfig) {
      output('AsyncEndpointConfigName', endpointConfig.attrEndpointConfigName,
        'The EndpointConfig the stack created for AsyncEndpointName.');
    }
  }

  private depthOrErrorsAlarm(alarmId: string, description: string, metricNamespace: string, metricName: string,
    dimension: string, value: string, statistic: string, alarmActions: string[] | undefined): cloudwatch.CfnAlarm {
    return this.pin(new cloudwatch.CfnAlarm(this, alarmId, {
      alarmDescription: description,
      namespace: metricNamespace,
      metricName,
      dimensions: [{ name: dimension, value }],
      statistic,
      period: 300,
      evaluationPeriods: 1,
      threshold: 1,
      comparisonOperator: 'GreaterThanOrEqualToThreshold',
      treatMissingData: 'notBreaching',
      alarmActions,
    }), alarmId);
  }

  /** Gives the construct's resource the template's logical id. */
  private pin<T extends IConstruct>(construct: T, logicalId: string): T {
    const element = (construct instanceof CfnElement ? construct : construct.node.defaultChild) as CfnElement;
    element.overrideLogicalId(`${this.idPrefix}${logicalId}`);
    return construct;
  }
}

function definedOnly(variables: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(variables).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** A built function's directory; `make build` (cargo lambda build --release --arm64) makes them. */
function functionCode(functionsDir: string, binary: string): string {
  const dir = path.join(functionsDir, binary);
  if (!fs.existsSync(path.join(dir, 'bootstrap'))) {
    throw new Error(`McpAsyncJobs: ${path.join(dir, 'bootstrap')} is missing: build the functions first (make build), `
      + 'or point functionsDir at where they are built');
  }
  return dir;
}

function toolSchema(file: string): agentcore.CfnGatewayTarget.ToolDefinitionProperty[] {
  if (!fs.existsSync(file)) {
    throw new Error(`McpAsyncJobs: the Gateway target's tool schema ${file} is missing (make tool-schema writes it)`);
  }
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

