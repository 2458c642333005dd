export { McpAsyncJobs } from './mcp-async-jobs';
export { PARAMETERS, ParameterSpec, parseParameter, propsFromParameters } from './parameters';
export { McpAsyncJobsProps, ToolCatalog } from './props';
export { builtFunctionsDir } from './repository';
