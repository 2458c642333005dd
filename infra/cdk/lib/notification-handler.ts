import { Duration } from 'aws-cdk-lib/core';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { CompletionEvents } from './completion-events';
import { Deployment } from './deployment';
import { consumeQueue, fn, invokePermission, logGroup, onFailureToDlq, queueEventSource, role, writeLogs } from './functions';
import { allow, decryptOutputs, tracing } from './policies';
import { queue, queuePolicy } from './queues';
import { Storage } from './storage';
import { OutcomeTopics } from './topics';

export interface NotificationHandler {
  readonly fn: lambda.Function;
  /** With useSqsBuffer, notifications that failed five times. */
  readonly bufferDlq?: sqs.Queue;
}

/**
 * notification-handler records the endpoint's outcomes from its topics: subscribed to them, or
 * with useSqsBuffer reading them from a queue subscribed in its place.
 */
export function notificationHandler(d: Deployment, storage: Storage, topics: OutcomeTopics,
  completions: CompletionEvents): NotificationHandler {
  const s = d.s;
  const dlq = storage.asyncFailureDlq;
  const notificationHandlerLogs = logGroup(d, 'NotificationHandlerLogGroup', 'notification-handler');
  let bufferQueue: sqs.Queue | undefined;
  let bufferDlq: sqs.Queue | undefined;
  if (s.useSqsBuffer) {
    bufferDlq = queue(d, 'NotificationBufferDLQ');
    bufferQueue = queue(d, 'NotificationBufferQueue', {
      visibilityTimeout: Duration.seconds(180), // six times the function timeout
      deadLetterQueue: { queue: bufferDlq, maxReceiveCount: 5 },
    });
  }
  const notificationHandlerRole = role(d, 'NotificationHandlerRole', 'notification-handler', [
    writeLogs(notificationHandlerLogs),
    ...tracing(d),
    // GetItem: one read at a cold start, of a key no job has, to open the connection in init.
    allow(['dynamodb:GetItem', 'dynamodb:UpdateItem'], [storage.resultsTable.tableArn]),
    // MCP Events: the outcome's entry in the owner's log, once (a conditional put), marked for
    // the webhooks of the owner's subscriptions (Query): the events table's stream takes it to
    // event-delivery.
    allow(['dynamodb:PutItem'], [storage.eventsTable.tableArn]),
    allow(['dynamodb:Query'], [storage.subscriptionsTable.tableArn]),
    allow(['s3:GetObject'], d.readableOutcomes),
    ...decryptOutputs(d),
    allow(['sqs:SendMessage'], [dlq.queueArn]),
    ...(bufferQueue ? [consumeQueue(bufferQueue)] : []),
    ...completions.putEvents,
  ]);
  const handler = fn(d, 'NotificationHandlerFunction', 'notification-handler', {
    description: 'Records SageMaker async inference outcomes in the results table.',
    role: notificationHandlerRole,
    logGroup: notificationHandlerLogs,
    timeoutSecs: 30,
    environment: {
      RESULTS_TABLE: storage.resultsTable.tableName,
      EVENTS_TABLE: storage.eventsTable.tableName,
      SUBSCRIPTIONS_TABLE: storage.subscriptionsTable.tableName,
      RESULT_TTL_SECS: String(s.resultTtlSecs),
      INLINE_RESULT_MAX_BYTES: String(s.inlineResultMaxBytes),
      EVENT_BUS_NAME: completions.eventBusName,
    },
  });
  onFailureToDlq(d, 'NotificationHandlerInvokeConfig', handler, dlq);

  const topicArns: Array<[string, string]> = [['Success', topics.successTopicArn], ['Error', topics.errorTopicArn]];
  if (bufferQueue) {
    queuePolicy(d, 'NotificationBufferQueuePolicy', bufferQueue, 'sns.amazonaws.com', topicArns.map(([, arn]) => arn));
    for (const [which, topicArn] of topicArns) {
      d.add(sns.CfnSubscription, `${which}TopicBufferSubscription`, {
        topicArn, protocol: 'sqs', endpoint: bufferQueue.queueArn,
      });
    }
    queueEventSource(d, 'NotificationBufferEventSource', bufferQueue, handler, {
      batchSize: s.sqsBatchSize,
      maximumBatchingWindowInSeconds: s.sqsBatchingWindowSecs,
    });
  } else {
    for (const [which, topicArn] of topicArns) {
      d.add(sns.CfnSubscription, `${which}TopicSubscription`, {
        topicArn, protocol: 'lambda', endpoint: handler.functionArn,
      });
      invokePermission(d, `${which}TopicInvokePermission`, handler, 'sns.amazonaws.com', topicArn);
    }
  }
  return { fn: handler, bufferDlq };
}
