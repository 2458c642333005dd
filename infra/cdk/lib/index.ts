export { builtFunctionsDir, McpAsyncJobs, McpAsyncJobsProps, ToolCatalog } from './mcp-async-jobs';
export { PARAMETERS, ParameterSpec, parseParameter, propsFromParameters } from './parameters';
