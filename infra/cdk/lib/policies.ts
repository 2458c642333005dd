/** IAM statements as the template writes them. */
export interface Statement {
  readonly Effect: 'Allow';
  readonly Action: string | string[];
  readonly Resource: string | string[];
}

/** An IAM statement in the template's spelling: one action or resource alone, several as a list. */
export function allow(actions: string[], resources: string[]): Statement {
  const one = (values: string[]) => (values.length === 1 ? values[0] : values);
  return { Effect: 'Allow', Action: one(actions), Resource: one(resources) };
}

// X-Ray takes no resource-level permissions.
export const xray = () => allow(['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], ['*']);

// Nor do SageMaker's lineage lists (the IAM service authorization reference names no resource
// type for them).
export const lineageLists = () => allow(['sagemaker:ListAssociations', 'sagemaker:ListArtifacts'], ['*']);
