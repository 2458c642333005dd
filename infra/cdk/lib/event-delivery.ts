import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Deployment } from './deployment';
import { consumeQueue, fn, logGroup, queueEventSource, role, writeLogs } from './functions';
import { allow, tracing } from './policies';
import { Storage } from './storage';

/**
 * event-delivery takes MCP Events' webhook deliveries from their FIFO queue and POSTs each to its
 * subscriber's callback URL (out to the internet: no VPC). A failed delivery goes back to the
 * queue with its backoff as the message's visibility timeout; after 20 receives, the DLQ.
 */
export function eventDelivery(d: Deployment, storage: Storage): lambda.Function {
  const queue = storage.eventDeliveryQueue;
  const eventDeliveryLogs = logGroup(d, 'EventDeliveryLogGroup', 'event-delivery');
  const eventDeliveryRole = role(d, 'EventDeliveryRole', 'event-delivery', [
    writeLogs(eventDeliveryLogs),
    ...tracing(d),
    // A delivery's subscription (its URL and secret), and what the delivery did to it.
    allow(['dynamodb:GetItem', 'dynamodb:UpdateItem'], [storage.subscriptionsTable.tableArn]),
    // The queue's event source.
    consumeQueue(queue),
    // A failed delivery goes back with its backoff as the message's visibility timeout.
    allow(['sqs:ChangeMessageVisibility'], [queue.queueArn]),
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
  queueEventSource(d, 'EventDeliveryEventSource', queue, delivery, { batchSize: 10 });
  return delivery;
}
