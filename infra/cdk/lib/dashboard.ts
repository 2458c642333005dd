/**
 * The CloudWatch dashboard and its body: the functions' own metrics (Embedded Metric Format, namespace
 * McpAsyncJobs/<name>, dimension Function) beside Lambda's and the DLQs'. The template writes the
 * same widgets out by hand; the parity test compares the two as JSON.
 */
import { Stack } from 'aws-cdk-lib/core';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { Deployment } from './deployment';

export interface DashboardNames {
  /** The functions' metrics namespace. */
  readonly namespace: string;
  readonly region: string;
  readonly notificationHandler: string;
  readonly pipelineRouter: string;
  readonly mcpTools: string;
  readonly eventDelivery: string;
  readonly asyncFailureDlq: string;
  readonly pipelineResultsDlq: string;
  /** MCP Events' webhook deliveries waiting for a retry, their DLQ, and the events stream's batches given up on. */
  readonly eventDeliveryQueue: string;
  readonly eventDeliveryDlq: string;
  readonly eventStreamFailureQueue: string;
}

const RUN_STATUSES = ['Succeeded', 'Failed', 'Stopped', 'CompletedWithFailures'];
type Metric = Array<string | Record<string, string>>;

export function dashboardBody(n: DashboardNames): object {
  const own = (name: string, fn: string, options: Record<string, string>, ...more: string[]): Metric =>
    [n.namespace, name, 'Function', fn, ...more, options];
  const sum = (label: string) => ({ stat: 'Sum', label });
  // A tool's metric from both ways in: the Function URL (mcp-tools) and the Gateway (gateway-target).
  const byEntry = (name: string, label: string): Metric[] => [
    own(name, 'mcp-tools', sum(`${label} (Function URL)`)),
    own(name, 'gateway-target', sum(`${label} (Gateway)`)),
  ];
  const widget = (x: number, y: number, title: string, stat: string, metrics: Metric[]) => ({
    type: 'metric', x, y, width: 12, height: 6,
    properties: { title, region: n.region, view: 'timeSeries', stat, period: 300, metrics },
  });
  // Every tool the functions report, a catalog's included: one line per function and tool.
  const perTool = (name: string): Metric[] => [[{
    expression: `SEARCH('{"${n.namespace}",Function,Tool} MetricName="${name}"', 'Sum', 300)`,
    id: name.toLowerCase(),
  }]];
  const functions: Array<[string, string]> = [
    [n.notificationHandler, 'notification-handler'], [n.pipelineRouter, 'pipeline-router'], [n.mcpTools, 'mcp-tools'],
    [n.eventDelivery, 'event-delivery']];

  return {
    widgets: [
      widget(0, 0, 'Jobs: submitted and outcomes', 'Sum', [
        ...byEntry('JobsSubmitted', 'submitted'),
        own('JobsCompleted', 'notification-handler', sum('completed')),
        own('JobsFailed', 'notification-handler', sum('failed')),
        own('JobsFailed', 'mcp-tools', sum('refused at submit')),
        ...byEntry('JobsCancelled', 'cancelled'),
      ]),
      widget(12, 0, 'Time from submit to outcome (ms)', 'Sum', [
        own('JobDuration', 'notification-handler', { stat: 'p50', label: 'p50' }),
        own('JobDuration', 'notification-handler', { stat: 'p90', label: 'p90' }),
        own('JobDuration', 'notification-handler', { stat: 'Maximum', label: 'max' }),
      ]),
      widget(0, 6, 'Outcomes not arriving by notification', 'Sum', [
        ...byEntry('JobsProbablyLost', 'probably lost'),
        ...byEntry('OutcomesReconciled', 'reconciled from S3'),
        own('NotificationsForUnknownJobs', 'notification-handler', sum('notifications for unknown jobs')),
        own('DuplicateNotifications', 'notification-handler', sum('duplicate notifications')),
      ]),
      widget(12, 6, 'Pipeline runs routed', 'Sum', [
        ...RUN_STATUSES.map((status) => own('RunsRouted', 'pipeline-router', sum(status), 'Status', status)),
        own('CompletionMessagesSent', 'pipeline-router', sum('completion messages sent')),
      ]),
      widget(0, 12, 'Tool calls', 'Sum', perTool('ToolCalls')),
      widget(12, 12, 'Tool errors', 'Sum', perTool('ToolErrors')),
      widget(0, 18, 'Cold starts', 'Sum',
        ['notification-handler', 'pipeline-router', 'mcp-tools', 'gateway-target', 'event-delivery']
          .map((fn) => own('ColdStart', fn, sum(fn)))),
      widget(12, 18, 'Lambda errors and throttles', 'Sum', functions.flatMap(([name, label]) => [
        ['AWS/Lambda', 'Errors', 'FunctionName', name, { label: `${label} errors` }],
        ['AWS/Lambda', 'Throttles', 'FunctionName', name, { label: `${label} throttles` }],
      ])),
      widget(0, 24, 'Lambda duration (ms)', 'p90', functions.map(([name, label]) =>
        ['AWS/Lambda', 'Duration', 'FunctionName', name, { label: `${label} p90`, stat: 'p90' }])),
      widget(12, 24, 'Dead-letter queues (messages waiting)', 'Maximum', [
        ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', n.asyncFailureDlq, { label: 'AsyncFailureDLQ' }],
        ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', n.pipelineResultsDlq, { label: 'PipelineResultsDLQ' }],
        ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', n.eventDeliveryDlq, { label: 'EventDeliveryDLQ' }],
      ]),
      widget(0, 30, 'Event deliveries: the oldest waiting (s)', 'Maximum', [
        ['AWS/SQS', 'ApproximateAgeOfOldestMessage', 'QueueName', n.eventDeliveryQueue, { label: 'EventDeliveryQueue' }],
      ]),
      widget(12, 30, 'Event deliveries waiting', 'Maximum', [
        ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', n.eventDeliveryQueue, { label: 'due' }],
        ['AWS/SQS', 'ApproximateNumberOfMessagesNotVisible', 'QueueName', n.eventDeliveryQueue,
          { label: 'in delivery or backing off' }],
      ]),
      widget(0, 36, 'Events stream: how far event-delivery is behind (ms)', 'Maximum', [
        ['AWS/Lambda', 'IteratorAge', 'FunctionName', n.eventDelivery, { label: 'event-delivery iterator age' }],
      ]),
      widget(12, 36, 'Events stream: batches given up (records waiting)', 'Maximum', [
        ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', n.eventStreamFailureQueue,
          { label: 'EventStreamFailureQueue' }],
      ]),
    ],
  };
}

/** The dashboard `<name>-jobs`, of the functions and queues named. */
export function dashboard(d: Deployment, names: Omit<DashboardNames, 'namespace' | 'region'>): cloudwatch.CfnDashboard {
  return d.add(cloudwatch.CfnDashboard, 'Dashboard', {
    dashboardName: `${d.name}-jobs`,
    dashboardBody: Stack.of(d.scope).toJsonString(dashboardBody({ namespace: d.namespace, region: d.region, ...names })),
  });
}
