import * as cognito from 'aws-cdk-lib/aws-cognito';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sagemaker from 'aws-cdk-lib/aws-sagemaker';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { alarms, alarmTopic, Watched } from './alarms';
import { completionEvents } from './completion-events';
import { dashboard } from './dashboard';
import { Deployment } from './deployment';
import { endpoints } from './endpoints';
import { eventDelivery } from './event-delivery';
import { gatewayTarget } from './gateway-target';
import { mcpTools } from './mcp-tools';
import { notificationHandler } from './notification-handler';
import { outputs, Shown } from './outputs';
import { pipelineRouter } from './pipeline-router';
import { McpAsyncJobsProps } from './props';
import { storage, Storage } from './storage';
import { tools } from './tools';
import { outcomeTopics } from './topics';
import { userPool } from './user-pool';

/**
 * The async side of SageMaker-backed MCP tools: the resources infra/template.yaml deploys for the
 * same parameter values, under the template's logical ids (so that tests/infra/test_cdk_parity.py
 * can hold each one to it), decided at synth time from the props. It implements what its parts
 * read of it (Storage, Watched, Shown), declared in those parts so that none imports this module.
 */
export class McpAsyncJobs extends Construct implements Storage, Watched, Shown {
  public readonly resultsTable: dynamodb.Table;
  public readonly pipelineResultsTable: dynamodb.Table;
  /**
   * MCP Events' log: notification-handler and pipeline-router append each job's and run's end; its
   * stream takes those with webhook subscribers to event-delivery.
   */
  public readonly eventsTable: dynamodb.Table;
  /** MCP Events' webhook subscriptions (mcp-tools' events/subscribe). */
  public readonly subscriptionsTable: dynamodb.Table;
  /** MCP Events' webhook deliveries waiting for a retry (FIFO), taken by event-delivery, and their DLQ. */
  public readonly eventDeliveryQueue: sqs.Queue;
  public readonly eventDeliveryDlq: sqs.Queue;
  /** Lambda's records of the events stream's batches event-delivery gave up on (metadata, not events). */
  public readonly eventStreamFailureQueue: sqs.Queue;
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
  /** Delivers MCP Events to their subscribers' webhooks. */
  public readonly eventDelivery: lambda.Function;
  /** For IAM callers of the Function URL. */
  public readonly callerPolicy: iam.CfnManagedPolicy;
  public readonly gatewayTarget?: lambda.Function;
  public readonly userPool?: cognito.CfnUserPool;
  /** The agents' app client (jobs.read, jobs.write). */
  public readonly userPoolClient?: cognito.CfnUserPoolClient;
  /** The approvers' app client (jobs.read, jobs.approve). */
  public readonly approverUserPoolClient?: cognito.CfnUserPoolClient;
  public readonly endpoint?: sagemaker.CfnEndpoint;
  /** The catalog's endpoints the construct created (catalogModelNames). */
  public readonly catalogEndpoints: sagemaker.CfnEndpoint[];
  /** The topic the alarms notify (alarmTopicArn, or the one created). */
  public readonly alarmTopicArn: string;

  constructor(scope: Construct, id: string, props: McpAsyncJobsProps) {
    super(scope, id);
    const d = new Deployment(this, props);

    const stored = storage(d);
    this.resultsTable = stored.resultsTable;
    this.pipelineResultsTable = stored.pipelineResultsTable;
    this.eventsTable = stored.eventsTable;
    this.subscriptionsTable = stored.subscriptionsTable;
    this.eventDeliveryQueue = stored.eventDeliveryQueue;
    this.eventDeliveryDlq = stored.eventDeliveryDlq;
    this.eventStreamFailureQueue = stored.eventStreamFailureQueue;
    this.pipelineResultsQueue = stored.pipelineResultsQueue;
    this.pipelineResultsDlq = stored.pipelineResultsDlq;
    this.pipelineCallbackQueue = stored.pipelineCallbackQueue;
    this.pipelineCallbackDlq = stored.pipelineCallbackDlq;
    this.asyncFailureDlq = stored.asyncFailureDlq;

    const topics = outcomeTopics(d);
    this.successTopicArn = topics.successTopicArn;
    this.errorTopicArn = topics.errorTopicArn;
    this.alarmTopicArn = alarmTopic(d);

    const created = endpoints(d, topics);
    this.endpoint = created.endpoint;
    this.catalogEndpoints = created.catalogEndpoints;

    const completions = completionEvents(d);
    this.completionEventBusName = completions.eventBusName;
    this.completionWebhookDlq = completions.webhookDlq;

    const handler = notificationHandler(d, stored, topics, completions);
    this.notificationHandler = handler.fn;
    this.pipelineRouter = pipelineRouter(d, stored);

    const pool = userPool(d);
    this.userPool = pool?.pool;
    this.userPoolClient = pool?.client;
    this.approverUserPoolClient = pool?.approverClient;

    const shared = tools(d, stored, completions);
    const server = mcpTools(d, shared, stored, pool);
    this.mcpTools = server.fn;
    this.mcpToolsUrl = server.url;
    this.callerPolicy = server.callerPolicy;
    this.gatewayTarget = gatewayTarget(d, shared);
    this.eventDelivery = eventDelivery(d, stored);

    alarms(d, this, handler.bufferDlq);
    dashboard(d, {
      notificationHandler: this.notificationHandler.functionName,
      // An inference-only stack has neither: its widgets show no data.
      pipelineRouter: this.pipelineRouter ? this.pipelineRouter.functionName : 'none',
      mcpTools: this.mcpTools.functionName,
      eventDelivery: this.eventDelivery.functionName,
      asyncFailureDlq: this.asyncFailureDlq.queueName,
      pipelineResultsDlq: this.pipelineResultsDlq ? this.pipelineResultsDlq.queueName : 'none',
      eventDeliveryQueue: this.eventDeliveryQueue.queueName,
      eventDeliveryDlq: this.eventDeliveryDlq.queueName,
      eventStreamFailureQueue: this.eventStreamFailureQueue.queueName,
    });
    outputs(d, this, pool?.issuer, created.endpointConfig);
  }
}
