import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Deployment } from './deployment';
import { consumeQueue, fn, logGroup, queueEventSource, role, writeLogs } from './functions';
import { allow, listStreams, tracing } from './policies';
import { Storage } from './storage';

/** The new events a delivery's first try takes from the events stream: those marked for webhooks. */
const WEBHOOK_EVENTS_PATTERN = '{"eventName":["INSERT"],"dynamodb":{"NewImage":{"webhooks":{"BOOL":[true]}}}}';

/**
 * event-delivery POSTs MCP Events to their subscribers' callback URLs (out to the internet: no
 * VPC). Each new event marked for webhooks comes from the events table's stream (its first try);
 * a delivery that fails waits for its retries in the FIFO delivery queue, which feeds it too, with
 * its backoff as the message's visibility timeout; after 20 receives, the DLQ. A stream batch it
 * gives up on is recorded in the stream failure queue.
 */
export function eventDelivery(d: Deployment, storage: Storage): lambda.Function {
  const queue = storage.eventDeliveryQueue;
  const streamArn = storage.eventsTable.tableStreamArn;
  if (!streamArn) {
    throw new Error('McpAsyncJobs: the events table has no stream for event-delivery');
  }
  const failures = storage.eventStreamFailureQueue;
  const eventDeliveryLogs = logGroup(d, 'EventDeliveryLogGroup', 'event-delivery');
  const eventDeliveryRole = role(d, 'EventDeliveryRole', 'event-delivery', [
    writeLogs(eventDeliveryLogs),
    ...tracing(d),
    // A delivery's subscription (its URL and secret), and what the delivery did to it.
    allow(['dynamodb:GetItem', 'dynamodb:UpdateItem'], [storage.subscriptionsTable.tableArn]),
    // The events table's stream, its event source: what AWSLambdaDynamoDBExecutionRole grants, the
    // reads on this stream only.
    allow(['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'], [streamArn]),
    listStreams(),
    // The queue's event source.
    consumeQueue(queue),
    // A failed delivery is queued for its retry (and the subscription's later events behind it),
    // or goes back with its backoff as the message's visibility timeout.
    allow(['sqs:SendMessage', 'sqs:ChangeMessageVisibility'], [queue.queueArn]),
    // The stream mapping's on-failure destination: Lambda sends there as this role.
    allow(['sqs:SendMessage'], [failures.queueArn]),
  ]);
  const delivery = fn(d, 'EventDeliveryFunction', 'event-delivery', {
    description: 'Delivers MCP Events to their subscribers\' webhooks.',
    role: eventDeliveryRole,
    logGroup: eventDeliveryLogs,
    timeoutSecs: 60,
    environment: {
      SUBSCRIPTIONS_TABLE: storage.subscriptionsTable.tableName,
      DELIVERY_QUEUE_URL: queue.queueUrl,
    },
  });
  // A delivery's first try, as soon as the event is logged. A batch it fails on is split to find
  // the event at fault and retried (10 times at most, while its records are under 6 hours old),
  // then recorded in the failure queue and left behind: the shard moves on.
  d.add(lambda.CfnEventSourceMapping, 'EventDeliveryStreamEventSource', {
    eventSourceArn: streamArn,
    functionName: delivery.functionName,
    startingPosition: 'LATEST',
    batchSize: 10,
    maximumBatchingWindowInSeconds: 0,
    filterCriteria: { filters: [{ pattern: WEBHOOK_EVENTS_PATTERN }] },
    functionResponseTypes: ['ReportBatchItemFailures'],
    bisectBatchOnFunctionError: true,
    maximumRetryAttempts: 10,
    maximumRecordAgeInSeconds: 21600,
    destinationConfig: { onFailure: { destination: failures.queueArn } },
  });
  // The retries: deliveries that failed their first try, and the events queued behind them.
  queueEventSource(d, 'EventDeliveryEventSource', queue, delivery, { batchSize: 10 });
  return delivery;
}
