import { Duration, RemovalPolicy } from 'aws-cdk-lib/core';
import * as events from 'aws-cdk-lib/aws-events';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Deployment } from './deployment';

const RETENTION_14_DAYS = Duration.seconds(1209600);

/** An SQS queue as the template's: SQS-managed encryption, messages kept 14 days. */
export function queue(d: Deployment, queueId: string, more: Partial<sqs.QueueProps> = {}): sqs.Queue {
  return d.add(sqs.Queue, queueId, {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    retentionPeriod: RETENTION_14_DAYS,
    // The template leaves DeletionPolicy at CloudFormation's default, Delete.
    removalPolicy: RemovalPolicy.DESTROY,
    ...more,
  });
}

/** The queue's policy: the service (sns, events) may send to it, from these sources only. */
export function queuePolicy(d: Deployment, policyId: string, target: sqs.Queue, service: string,
  sourceArn: string | string[]): sqs.CfnQueuePolicy {
  return d.add(sqs.CfnQueuePolicy, policyId, {
    queues: [target.queueUrl],
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{
        Effect: 'Allow',
        Principal: { Service: service },
        Action: 'sqs:SendMessage',
        Resource: target.queueArn,
        Condition: { ArnEquals: { 'aws:SourceArn': sourceArn } },
      }],
    },
  });
}

/**
 * How a rule's target is retried: EventBridge's most, 185 times over a day, then the event goes
 * to the DLQ (whose queuePolicy lets the rule send).
 */
export function retriedThenDeadLettered(dlq: sqs.Queue): Pick<events.CfnRule.TargetProperty, 'retryPolicy' | 'deadLetterConfig'> {
  return {
    retryPolicy: { maximumRetryAttempts: 185, maximumEventAgeInSeconds: 86400 },
    deadLetterConfig: { arn: dlq.queueArn },
  };
}
