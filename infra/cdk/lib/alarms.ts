import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Deployment } from './deployment';
import { given } from './settings';

/**
 * The topic the alarms notify: alarmTopicArn, or one created here. Not encrypted: CloudWatch
 * cannot publish to a topic under alias/aws/sns, whose key policy AWS owns; alarm states carry no
 * job data.
 */
export function alarmTopic(d: Deployment): string {
  const s = d.s;
  if (given(s.alarmTopicArn)) {
    return s.alarmTopicArn;
  }
  const topic = d.add(sns.CfnTopic, 'AlarmTopic', { displayName: `${d.name} alarms` });
  if (given(s.alarmEmail)) {
    d.add(sns.CfnSubscription, 'AlarmEmailSubscriptionToTopic', {
      topicArn: topic.ref, protocol: 'email', endpoint: s.alarmEmail,
    });
  }
  return topic.ref;
}

/**
 * What the alarms watch: the functions and the DLQs; undefined where the stack has no such one.
 * McpAsyncJobs implements it: declared here so that this part does not import the construct.
 */
export interface Watched {
  /** The topic the alarms notify. */
  readonly alarmTopicArn: string;
  readonly notificationHandler: lambda.Function;
  readonly pipelineRouter?: lambda.Function;
  readonly mcpTools: lambda.Function;
  readonly eventDelivery: lambda.Function;
  readonly asyncFailureDlq: sqs.Queue;
  readonly pipelineResultsDlq?: sqs.Queue;
  readonly pipelineCallbackDlq?: sqs.Queue;
  readonly completionWebhookDlq?: sqs.Queue;
  readonly eventDeliveryDlq: sqs.Queue;
  /** Lambda's records of the events stream's batches event-delivery gave up on. */
  readonly eventStreamFailureQueue: sqs.Queue;
}

/** The alarms, notifying the alarm topic; with useSqsBuffer, one on the buffer's DLQ too. */
export function alarms(d: Deployment, w: Watched, notificationBufferDlq: sqs.Queue | undefined): void {
  const alarmActions = [w.alarmTopicArn];
  const errorsAlarm = (alarmId: string, description: string, target: lambda.Function) =>
    depthOrErrorsAlarm(d, alarmId, description, 'AWS/Lambda', 'Errors', 'FunctionName', target.functionName, 'Sum', alarmActions);
  errorsAlarm('NotificationHandlerErrorsAlarm',
    'notification-handler failed on a notification (it is retried, then sent to the failure DLQ).', w.notificationHandler);
  if (w.pipelineRouter) {
    errorsAlarm('PipelineRouterErrorsAlarm',
      'pipeline-router failed on a status change (it is retried, then sent to the failure DLQ).', w.pipelineRouter);
  }
  errorsAlarm('McpToolsErrorsAlarm',
    'mcp-tools invocations failed (tool errors are not function errors; these are crashes or timeouts).', w.mcpTools);
  errorsAlarm('EventDeliveryErrorsAlarm',
    'event-delivery failed on a batch (a crash or timeout; a receiver refusing a delivery is not one).', w.eventDelivery);
  const depthAlarm = (alarmId: string, description: string, waiting: sqs.Queue) =>
    depthOrErrorsAlarm(d, alarmId, description, 'AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName',
      waiting.queueName, 'Maximum', alarmActions);
  depthAlarm('AsyncFailureDLQDepthAlarm',
    'Notifications or pipeline events that could not be recorded are waiting in the failure DLQ.', w.asyncFailureDlq);
  if (w.pipelineResultsDlq) {
    depthAlarm('PipelineResultsDLQDepthAlarm',
      'Completion messages the consumer could not process are waiting in the DLQ.', w.pipelineResultsDlq);
  }
  if (w.pipelineCallbackDlq) {
    depthAlarm('PipelineCallbackDLQDepthAlarm',
      'Questions of pipeline CallbackSteps that could not be recorded are waiting in the DLQ.', w.pipelineCallbackDlq);
  }
  if (notificationBufferDlq) {
    depthAlarm('NotificationBufferDLQDepthAlarm', 'Buffered notifications failed five times and wait in the buffer DLQ.',
      notificationBufferDlq);
  }
  if (w.completionWebhookDlq) {
    depthAlarm('CompletionWebhookDLQDepthAlarm', 'Completion events the webhook did not take within a day wait in its DLQ.',
      w.completionWebhookDlq);
  }
  depthAlarm('EventDeliveryDLQDepthAlarm',
    'MCP Events deliveries event-delivery did not finish in 20 receives wait in its DLQ (make redrive ARGS=--event-deliveries).',
    w.eventDeliveryDlq);
  depthAlarm('EventStreamFailureQueueDepthAlarm',
    'event-delivery gave up on batches of the events table\'s stream; their webhooks were not pushed (the events stay in '
    + 'the log for events/poll; docs/events.md).', w.eventStreamFailureQueue);
  // The stream's records wait while event-delivery fails and retries a batch (its shard holds
  // still behind it) or cannot keep up: webhooks are late; events/poll is not.
  depthOrErrorsAlarm(d, 'EventDeliveryIteratorAgeAlarm',
    'event-delivery is more than a minute behind the events table\'s stream (webhook pushes are late; events/poll is not).',
    'AWS/Lambda', 'IteratorAge', 'FunctionName', w.eventDelivery.functionName, 'Maximum', alarmActions,
    { threshold: 60000, comparisonOperator: 'GreaterThanThreshold' });

  // A job pending past its deadline, or an outcome found in S3 by a status check, means
  // SageMaker's notifications are not reaching notification-handler.
  ownMetricsAlarm(d, 'OutcomesNotArrivingAlarm', 'Jobs are finishing without their SNS notification being recorded '
    + '(a status check found one pending past its deadline, or found its outcome in S3). Check the topics\' '
    + 'subscriptions and the failure DLQ, then run make redrive.', {
    id: 'missing',
    label: 'jobs probably lost or reconciled from S3',
    expression: 'FILL(lost1, 0) + FILL(lost2, 0) + FILL(rec1, 0) + FILL(rec2, 0)',
    of: [
      ['lost1', 'JobsProbablyLost', 'mcp-tools'],
      ['lost2', 'JobsProbablyLost', 'gateway-target'],
      ['rec1', 'OutcomesReconciled', 'mcp-tools'],
      ['rec2', 'OutcomesReconciled', 'gateway-target'],
    ],
  }, { threshold: 1, comparisonOperator: 'GreaterThanOrEqualToThreshold', alarmActions });

  const outcomes = 'FILL(ok, 0) + FILL(failed, 0) + FILL(refused, 0) + FILL(gwrefused, 0)';
  const failures = 'FILL(failed, 0) + FILL(refused, 0) + FILL(gwrefused, 0)';
  ownMetricsAlarm(d, 'JobFailureRateAlarm', 'More than FailureRateThreshold of job outcomes in 15 minutes (at '
    + 'least 5) were failures: the model or its input is failing. Read failure_reason in check_job_status or the '
    + 'results table.', {
    id: 'rate',
    label: 'failed share of outcomes',
    expression: `IF(${outcomes} >= 5, (${failures}) / (${outcomes}), 0)`,
    of: [
      ['ok', 'JobsCompleted', 'notification-handler'],
      ['failed', 'JobsFailed', 'notification-handler'],
      ['refused', 'JobsFailed', 'mcp-tools'],
      ['gwrefused', 'JobsFailed', 'gateway-target'],
    ],
  }, { threshold: d.s.failureRateThreshold, comparisonOperator: 'GreaterThanThreshold', alarmActions });
}

/**
 * An alarm on one expression over the functions' own metrics, each summed over 15 minutes: `of`
 * names them as [id in the expression, metric, function].
 */
function ownMetricsAlarm(d: Deployment, alarmId: string, description: string,
  math: { id: string; label: string; expression: string; of: Array<[string, string, string]> },
  when: { threshold: number; comparisonOperator: string; alarmActions: string[] }): cloudwatch.CfnAlarm {
  return d.add(cloudwatch.CfnAlarm, alarmId, {
    alarmDescription: description,
    metrics: [
      { id: math.id, label: math.label, returnData: true, expression: math.expression },
      ...math.of.map(([id, metricName, fnName]) => ({
        id,
        returnData: false,
        metricStat: {
          metric: { namespace: d.namespace, metricName, dimensions: [{ name: 'Function', value: fnName }] },
          period: 900,
          stat: 'Sum',
        },
      })),
    ],
    evaluationPeriods: 1,
    ...when,
    treatMissingData: 'notBreaching',
  });
}

/** An alarm on one metric over 5 minutes: by default, at 1 or more (a depth, an error). */
function depthOrErrorsAlarm(d: Deployment, alarmId: string, description: string, metricNamespace: string, metricName: string,
  dimension: string, value: string, statistic: string, alarmActions: string[] | undefined,
  when: { threshold: number; comparisonOperator: string } = { threshold: 1, comparisonOperator: 'GreaterThanOrEqualToThreshold' },
): cloudwatch.CfnAlarm {
  return d.add(cloudwatch.CfnAlarm, alarmId, {
    alarmDescription: description,
    namespace: metricNamespace,
    metricName,
    dimensions: [{ name: dimension, value }],
    statistic,
    period: 300,
    evaluationPeriods: 1,
    ...when,
    treatMissingData: 'notBreaching',
    alarmActions,
  });
}
