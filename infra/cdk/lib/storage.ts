import { Aws, Duration, Fn, RemovalPolicy } from 'aws-cdk-lib/core';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Deployment } from './deployment';
import { queue } from './queues';

/**
 * The tables of jobs, runs and MCP Events (the log, the webhook subscriptions), and the queues every stack has
 * or every stack with a pipeline has.
 * Declared here, not taken from McpAsyncJobs (which implements it), so that no part imports the construct.
 */
export interface Storage {
  readonly resultsTable: dynamodb.Table;
  readonly pipelineResultsTable: dynamodb.Table;
  /** MCP Events' log: each owner's events by position; its stream (NEW_IMAGE) feeds event-delivery. */
  readonly eventsTable: dynamodb.Table;
  /** MCP Events' webhook subscriptions: each owner's by id, their signing secrets under KMS. */
  readonly subscriptionsTable: dynamodb.Table;
  /** Webhook deliveries waiting for a retry, one message per delivery (FIFO), and its DLQ. */
  readonly eventDeliveryQueue: sqs.Queue;
  readonly eventDeliveryDlq: sqs.Queue;
  /** Lambda's records of the events stream's batches event-delivery gave up on. */
  readonly eventStreamFailureQueue: sqs.Queue;
  /** The pipeline's queues: undefined in an inference-only stack. */
  readonly pipelineResultsQueue?: sqs.Queue;
  readonly pipelineResultsDlq?: sqs.Queue;
  readonly pipelineCallbackQueue?: sqs.Queue;
  readonly pipelineCallbackDlq?: sqs.Queue;
  readonly asyncFailureDlq: sqs.Queue;
}

export function storage(d: Deployment): Storage {
  const table = (tableId: string, partitionKey: string, sortKey?: string, stream?: dynamodb.StreamViewType) =>
    d.add(dynamodb.Table, tableId, {
      partitionKey: { name: partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: sortKey ? { name: sortKey, type: dynamodb.AttributeType.STRING } : undefined,
      stream,
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: 'ttl',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      // Kept on delete (DeletionPolicy RetainExceptOnCreate) and on replacement, but not after a
      // failed first create.
      removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    });
  const resultsTable = table('ResultsTable', 'inference_id');
  const pipelineResultsTable = table('PipelineResultsTable', 'session_id', 'execution_arn');
  // Its stream takes each new event marked for webhooks to event-delivery, as logged.
  const eventsTable = table('EventsTable', 'owner', 'position', dynamodb.StreamViewType.NEW_IMAGE);
  const subscriptionsTable = table('SubscriptionsTable', 'owner', 'id');
  // The webhooks' signing secrets live here: KMS with the AWS managed key, said outright.
  (subscriptionsTable.node.defaultChild as dynamodb.CfnTable).sseSpecification = { sseEnabled: true, sseType: 'KMS' };
  return {
    resultsTable,
    pipelineResultsTable,
    eventsTable,
    subscriptionsTable,
    ...deliveryQueues(d),
    ...(d.hasPipeline ? pipelineQueues(d) : {}),
    asyncFailureDlq: queue(d, 'AsyncFailureDLQ'),
  };
}

/** A FIFO queue's name holds at most 80 characters, .fifo included. */
const SQS_NAME_MAX = 80;

/**
 * The queue of MCP Events' webhook deliveries waiting for a retry (FIFO: in the order of the
 * owner's log) and its DLQ, and where Lambda records the events stream's batches given up on.
 * Named from the stack's id, not its name: a FIFO queue's name would not hold a long stack name
 * (nor do CloudFormation's generated FIFO names always fit). A logicalIdPrefix goes in too, so
 * that two constructs in one stack have queues of their own.
 */
function deliveryQueues(d: Deployment) {
  const stackId = Fn.select(2, Fn.split('/', Aws.STACK_ID));
  const named = (what: string) => {
    const prefix = d.idPrefix ? `${d.idPrefix}-` : '';
    // The stack id's last part is a UUID: 36 characters.
    if (`${what}-${prefix}.fifo`.length + 36 > SQS_NAME_MAX) {
      throw new Error(`McpAsyncJobs: logicalIdPrefix "${d.idPrefix}" is too long for the queue name ${what}-`
        + `${prefix}<stack id>.fifo (at most ${SQS_NAME_MAX} characters): give a shorter one`);
    }
    return `${what}-${prefix}${stackId}.fifo`;
  };
  const eventDeliveryDlq = queue(d, 'EventDeliveryDLQ', { queueName: named('mcp-event-delivery-dlq'), fifo: true });
  const eventDeliveryQueue = queue(d, 'EventDeliveryQueue', {
    queueName: named('mcp-event-delivery'),
    fifo: true,
    contentBasedDeduplication: false,
    visibilityTimeout: Duration.seconds(360), // six times event-delivery's timeout
    retentionPeriod: Duration.seconds(345600),
    deadLetterQueue: { queue: eventDeliveryDlq, maxReceiveCount: 20 },
  });
  // A standard queue (the stream mapping's on-failure destination): CloudFormation names it.
  const eventStreamFailureQueue = queue(d, 'EventStreamFailureQueue');
  return { eventDeliveryQueue, eventDeliveryDlq, eventStreamFailureQueue };
}

/** Only with a pipeline: the completion queue of its runs, and its CallbackSteps' questions. */
function pipelineQueues(d: Deployment) {
  const pipelineResultsDlq = queue(d, 'PipelineResultsDLQ');
  const pipelineResultsQueue = queue(d, 'PipelineResultsQueue', {
    deadLetterQueue: { queue: pipelineResultsDlq, maxReceiveCount: 5 },
  });
  const pipelineCallbackDlq = queue(d, 'PipelineCallbackDLQ');
  const pipelineCallbackQueue = queue(d, 'PipelineCallbackQueue', {
    visibilityTimeout: Duration.seconds(180), // six times pipeline-router's timeout
    deadLetterQueue: { queue: pipelineCallbackDlq, maxReceiveCount: 5 },
  });
  return { pipelineResultsDlq, pipelineResultsQueue, pipelineCallbackDlq, pipelineCallbackQueue };
}
