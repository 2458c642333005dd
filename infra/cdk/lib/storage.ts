import { Duration, RemovalPolicy } from 'aws-cdk-lib/core';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Deployment } from './deployment';
import { queue } from './queues';

/**
 * The tables of jobs, runs and MCP Events' log, and the queues every stack has or every stack with a pipeline has.
 * Declared here, not taken from McpAsyncJobs (which implements it), so that no part imports the construct.
 */
export interface Storage {
  readonly resultsTable: dynamodb.Table;
  readonly pipelineResultsTable: dynamodb.Table;
  /** MCP Events' log: each owner's events by position. */
  readonly eventsTable: dynamodb.Table;
  /** The pipeline's queues: undefined in an inference-only stack. */
  readonly pipelineResultsQueue?: sqs.Queue;
  readonly pipelineResultsDlq?: sqs.Queue;
  readonly pipelineCallbackQueue?: sqs.Queue;
  readonly pipelineCallbackDlq?: sqs.Queue;
  readonly asyncFailureDlq: sqs.Queue;
}

export function storage(d: Deployment): Storage {
  const table = (tableId: string, partitionKey: string, sortKey?: string) => d.add(dynamodb.Table, tableId, {
    partitionKey: { name: partitionKey, type: dynamodb.AttributeType.STRING },
    sortKey: sortKey ? { name: sortKey, type: dynamodb.AttributeType.STRING } : undefined,
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
  const eventsTable = table('EventsTable', 'owner', 'position');
  return {
    resultsTable,
    pipelineResultsTable,
    eventsTable,
    ...(d.hasPipeline ? pipelineQueues(d) : {}),
    asyncFailureDlq: queue(d, 'AsyncFailureDLQ'),
  };
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
