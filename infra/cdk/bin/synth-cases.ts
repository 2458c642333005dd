#!/usr/bin/env node
/**
 * The CDK side of the parity test: synthesizes the construct once per case of parameter values,
 * all in this one process (a `cdk synth` per case would start the CLI and node each time).
 *   node dist/bin/synth-cases.js <request.json> <result.json>
 * request: {"functionsDir": "...", "context": {...}?, "cases": {"<name>": {"<Parameter>": "<value>", ...}}}
 * result:  {"parameters": PARAMETERS, "cases": {"<name>": {"template": {...}} | {"error": "..."}}}
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App, Stack } from 'aws-cdk-lib/core';
import { McpAsyncJobs, McpAsyncJobsProps, PARAMETERS, propsFromParameters } from '../lib';

interface Request {
  readonly functionsDir: string;
  readonly context?: Record<string, unknown>;
  readonly cases: Record<string, Record<string, string>>;
}

const [requestFile, resultFile] = process.argv.slice(2);
if (!requestFile || !resultFile) {
  console.error('usage: synth-cases.js <request.json> <result.json>');
  process.exit(2);
}
const request = JSON.parse(fs.readFileSync(requestFile, 'utf8')) as Request;
const cases: Record<string, { template: unknown } | { error: string }> = {};
for (const [name, values] of Object.entries(request.cases)) {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-cdk-case-'));
  try {
    // Validation runs once elsewhere (the app's CLI synth test); here it would cost seconds a case.
    const app = new App({ outdir, context: request.context, analyticsReporting: false, builtinCloudFormationValidation: false });
    const stack = new Stack(app, 'mcp-jobs');
    new McpAsyncJobs(stack, 'Jobs', {
      ...(propsFromParameters(values) as unknown as McpAsyncJobsProps),
      functionsDir: request.functionsDir,
    });
    cases[name] = { template: app.synth().getStackByName(stack.stackName).template };
  } catch (error) {
    cases[name] = { error: (error as Error).message };
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}
fs.writeFileSync(resultFile, JSON.stringify({ parameters: PARAMETERS, cases }));
