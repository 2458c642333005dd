import * as events from 'aws-cdk-lib/aws-events';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Deployment } from './deployment';
import { allow, serviceRole, Statement } from './policies';
import { queue, queuePolicy, retriedThenDeadLettered } from './queues';
import { given } from './settings';

/**
 * Each recorded job outcome is put on the bus (EVENT_BUS_NAME) after its write; rules route it
 * on. Nothing without completionEvents.
 */
export interface CompletionEvents {
  /** The bus outcomes are announced on; undefined without completion events. */
  readonly eventBusName?: string;
  /** What the functions that record outcomes are granted to announce them. */
  readonly putEvents: Statement[];
  /** Completion events the webhook did not take; undefined without a webhook. */
  readonly webhookDlq?: sqs.Queue;
}

export function completionEvents(d: Deployment): CompletionEvents {
  const s = d.s;
  const eventBus = s.completionEvents === 'stack-bus'
    ? d.add(events.CfnEventBus, 'CompletionEventBus', { name: `${d.name}-completions` })
    : undefined;
  const eventBusName = s.completionEvents === 'none' ? undefined : eventBus ? eventBus.ref : 'default';
  const putEvents = s.completionEvents === 'none'
    ? []
    : [allow(['events:PutEvents'], [eventBus ? eventBus.attrArn : `arn:${d.partition}:events:${d.region}:${d.account}:event-bus/default`])];
  const webhookDlq = given(s.completionWebhookUrl) && eventBusName ? webhook(d, eventBusName) : undefined;
  return { eventBusName, putEvents, webhookDlq };
}

/** Every completion event POSTed to completionWebhookUrl (an API destination); returns its DLQ. */
function webhook(d: Deployment, eventBusName: string): sqs.Queue {
  const s = d.s;
  // EventBridge signs nothing: the key goes in a header from the connection's secret.
  const connection = d.add(events.CfnConnection, 'CompletionWebhookConnection', {
    description: `The completion webhook of stack ${d.name}.`,
    authorizationType: 'API_KEY',
    authParameters: {
      apiKeyAuthParameters: { apiKeyName: s.completionWebhookApiKeyName, apiKeyValue: `{{resolve:secretsmanager:${s.completionWebhookApiKeySecret}:SecretString}}` },
    },
  });
  const destination = d.add(events.CfnApiDestination, 'CompletionWebhookDestination', {
    connectionArn: connection.attrArn,
    invocationEndpoint: s.completionWebhookUrl,
    httpMethod: 'POST',
    invocationRateLimitPerSecond: 10,
  });
  const webhookRole = serviceRole(d, 'CompletionWebhookRole', 'events.amazonaws.com', 'completion-webhook',
    [allow(['events:InvokeApiDestination'], [destination.attrArn])]);
  const webhookDlq = queue(d, 'CompletionWebhookDLQ');
  const webhookRule = d.add(events.CfnRule, 'CompletionWebhookRule', {
    description: 'Every completion event of this stack\'s jobs, to the webhook.',
    eventBusName,
    eventPattern: { 'source': ['mcp.async-jobs'], 'detail-type': ['Async Job Completed', 'Async Job Failed'] },
    targets: [{
      id: 'webhook',
      arn: destination.attrArn,
      roleArn: webhookRole.roleArn,
      ...retriedThenDeadLettered(webhookDlq),
    }],
  });
  queuePolicy(d, 'CompletionWebhookDLQPolicy', webhookDlq, 'events.amazonaws.com', webhookRule.attrArn);
  return webhookDlq;
}
