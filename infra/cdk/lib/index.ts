export { McpAsyncJobs, McpAsyncJobsProps } from './mcp-async-jobs';
export { PARAMETERS, ParameterSpec, parseParameter, propsFromParameters } from './parameters';
