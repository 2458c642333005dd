import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ToolCatalog } from './props';
import { REPO_ROOT } from './repository';
import { given, Settings } from './settings';

/** The tool catalog as the construct wires it: the file the tools read, and the names granted beside the stack's own. */
export interface Catalog {
  /** The catalog's file name and content, when one is given. */
  readonly file?: CatalogFile;
  /** The catalog's endpoints, then catalogEndpointNames, each once. */
  readonly endpoints: string[];
  /** The catalog's pipelines, then catalogPipelineNames, each once. */
  readonly pipelines: string[];
  /** The endpoints the construct creates from a Model, each in the slot of its place (the template's CatalogEndpoint<i>). */
  readonly models: Array<{ readonly slot: number; readonly endpoint: string; readonly model: string }>;
}

export interface CatalogFile {
  readonly fileName: string;
  readonly content: string;
  readonly parsed: ToolCatalog;
}

/**
 * The tool catalog's endpoints and pipelines, beside the stack's own (granted as the template
 * grants CatalogEndpointNames and CatalogPipelineNames: in statements of their own).
 */
export function catalogOf(s: Settings): Catalog {
  const file = given(s.catalog as string) || typeof s.catalog === 'object' ? loadCatalog(s.catalog) : undefined;
  const unique = (names: string[]) => names.filter((n, i) => given(n) && names.indexOf(n) === i);
  const fromCatalog = file ? catalogNames(file.parsed, file.fileName) : { endpoints: [], pipelines: [] };
  const endpoints = unique([...fromCatalog.endpoints, ...s.catalogEndpointNames]);
  const pipelines = unique([...fromCatalog.pipelines, ...s.catalogPipelineNames]);
  if (pipelines.length > 0 && !given(s.pipelineName)) {
    throw new Error('McpAsyncJobs: PipelineForCatalogPipelines: the catalog\'s pipelines need pipelineName (the stack '
      + 'routes pipeline runs only with it): set it to one of them');
  }
  if (s.catalogModelNames.length > endpoints.length && s.catalogModelNames.slice(endpoints.length).some(given)) {
    throw new Error(`McpAsyncJobs: catalogModelNames has ${s.catalogModelNames.length} places, the catalog's `
      + `endpoints ${endpoints.length}: give a Model (or '') for each endpoint, in their order`);
  }
  const models = endpoints.slice(0, 10)
    .map((endpoint, i) => ({ slot: i + 1, endpoint, model: s.catalogModelNames[i] ?? '' }))
    .filter((m) => given(m.model));
  return { file, endpoints, pipelines, models };
}

/** The catalog's file name and content, from a path (relative to the repository) or the parsed catalog. */
function loadCatalog(catalog: string | ToolCatalog): CatalogFile {
  if (typeof catalog !== 'string') {
    return { fileName: 'catalog.json', content: JSON.stringify(catalog, null, 2), parsed: catalog };
  }
  const file = path.resolve(REPO_ROOT, catalog);
  let content: string;
  try {
    content = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`McpAsyncJobs: the tool catalog ${file} cannot be read (${(error as Error).message})`);
  }
  try {
    return { fileName: path.basename(file), content, parsed: JSON.parse(content) as ToolCatalog };
  } catch (error) {
    throw new Error(`McpAsyncJobs: the tool catalog ${file} is not JSON (${(error as Error).message})`);
  }
}

/** The endpoints and pipelines a catalog names, each once in its order; an error names the tool and the field. */
function catalogNames(catalog: ToolCatalog, source: string): { endpoints: string[]; pipelines: string[] } {
  const found = { endpoints: [] as string[], pipelines: [] as string[] };
  const read = (key: 'async_tools' | 'pipeline_tools', field: 'endpoint' | 'pipeline', into: string[]) => {
    const tools: unknown = (catalog as Record<string, unknown>)[key] ?? [];
    if (!Array.isArray(tools)) {
      throw new Error(`McpAsyncJobs: ${source}: ${key} must be a list of tools`);
    }
    tools.forEach((tool: Record<string, unknown>, i) => {
      const where = `${key}[${i}]${typeof tool?.name === 'string' ? ` (${tool.name})` : ''}`;
      const value = tool?.[field];
      if (typeof value !== 'string' || value === '') {
        throw new Error(`McpAsyncJobs: ${source}: ${where}: "${field}" is missing or not a string`);
      }
      if (!into.includes(value)) {
        into.push(value);
      }
    });
  };
  read('async_tools', 'endpoint', found.endpoints);
  read('pipeline_tools', 'pipeline', found.pipelines);
  return found;
}

/** A directory holding tool-catalog/<file>: the layer's content (Lambda extracts it to /opt). */
export function catalogLayerDir(fileName: string, content: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-tool-catalog-'));
  fs.mkdirSync(path.join(dir, 'tool-catalog'));
  fs.writeFileSync(path.join(dir, 'tool-catalog', fileName), content);
  return dir;
}
