import { zod } from '../config/zod-runtime.js';
import { BASH_YIELD_DESCRIPTION, TOOL_DESCRIPTIONS } from './tool-descriptions.js';
import { ALL_TOOL_NAMES, TOOL_NAMES, toolInputSchemas, type ToolName } from './tool-schemas.js';

/** JSON Schema (draft 2020-12) of a tool's input, as LLM function-calling APIs expect it. */
export type JsonSchema = Record<string, unknown>;

export interface ToolDefinition {
  name: ToolName;
  description: string;
  inputSchema: JsonSchema;
}

export interface ToolDefinitionOptions {
  /**
   * Tools to offer, in this order. Default: all seven. Hosts drop `bash` when host bash is disabled
   * for a local sandbox, so the model is not offered a tool that can only refuse.
   */
  tools?: readonly ToolName[];
  /**
   * Shape each schema for "strict" function calling (OpenAI's structured outputs rules): every
   * property is listed in `required`, an optional one as nullable (`null` means "omitted", which
   * the tools accept), and only the keywords that mode allows (no `default`, no string lengths).
   * Default false: the plain schema, where optional fields are simply not required.
   */
  strict?: boolean;
  /**
   * Offer bash's yield mode (`yield_time_ms`) and, unless `tools` says otherwise, the process tools
   * (`process_output`, `process_write`, `process_kill`, `process_list`). Default false: bash is the
   * reference's one-shot tool and its schema does not mention the yield mode.
   */
  processTools?: boolean;
}

/** Bounds the model is told; the tools clamp or refuse out-of-range values the same way. */
const NUMBER_BOUNDS: Readonly<Record<string, { minimum: number; maximum?: number }>> = {
  start_line: { minimum: 1 },
  end_line: { minimum: 1 },
};
const MAX_RESULTS_BOUNDS: Readonly<Partial<Record<ToolName, number>>> = { glob: 1000, grep: 500 };

/** Keywords OpenAI strict mode accepts in a property schema; everything else is dropped. */
const STRICT_KEYWORDS = new Set([
  'type',
  'description',
  'enum',
  'anyOf',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'minimum',
  'maximum',
  'pattern',
]);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * zod's safe-integer bounds (±2^53-1) say nothing to a model and only lengthen the prompt; the
 * tool-specific bounds replace them.
 */
function refineNumber(name: ToolName, field: string, schema: JsonObject): JsonObject {
  const { minimum, maximum, ...rest } = schema;
  const out: JsonObject = { ...rest };
  if (typeof minimum === 'number' && minimum > Number.MIN_SAFE_INTEGER) out.minimum = minimum;
  if (typeof maximum === 'number' && maximum < Number.MAX_SAFE_INTEGER) out.maximum = maximum;
  const bounds = NUMBER_BOUNDS[field];
  if (bounds) Object.assign(out, bounds);
  const maxResults = MAX_RESULTS_BOUNDS[name];
  if (field === 'max_results' && maxResults !== undefined) {
    out.minimum = 1;
    out.maximum = maxResults;
  }
  return out;
}

function refineProperty(name: ToolName, field: string, schema: JsonObject): JsonObject {
  if (schema.type === 'integer') return refineNumber(name, field, schema);
  if (Array.isArray(schema.anyOf)) {
    const anyOf = schema.anyOf.map((branch) =>
      isObject(branch) && branch.type === 'integer' ? refineNumber(name, field, branch) : branch,
    );
    return { ...schema, anyOf };
  }
  return schema;
}

function strictProperty(schema: JsonObject, required: boolean): JsonObject {
  const kept: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!STRICT_KEYWORDS.has(key)) continue;
    kept[key] = key === 'anyOf' && Array.isArray(value) ? value.map(strictBranch) : value;
  }
  if (required) return kept;
  const anyOf = kept.anyOf;
  if (Array.isArray(anyOf)) {
    return anyOf.some((b) => isObject(b) && b.type === 'null')
      ? kept
      : { ...kept, anyOf: [...anyOf, { type: 'null' }] };
  }
  const { description, ...typed } = kept;
  return {
    ...(description === undefined ? {} : { description }),
    anyOf: [typed, { type: 'null' }],
  };
}

function strictBranch(branch: Json): Json {
  if (!isObject(branch)) return branch;
  return Object.fromEntries(Object.entries(branch).filter(([key]) => STRICT_KEYWORDS.has(key)));
}

/**
 * One tool's input schema as a plain JSON object: a JSON round trip drops the non-enumerable
 * `~standard` marker zod attaches (SDKs that detect Standard Schema would take the plain schema
 * for a zod one), and closed objects (`additionalProperties: false`) tell the model that unknown
 * fields are not part of the contract.
 */
function inputSchemaOf(name: ToolName, strict: boolean, processTools: boolean): JsonSchema {
  const rendered = JSON.parse(
    JSON.stringify(zod().toJSONSchema(toolInputSchemas()[name], { io: 'input' })),
  ) as JsonObject;
  const properties = isObject(rendered.properties) ? rendered.properties : {};
  const required = Array.isArray(rendered.required) ? rendered.required : [];
  const refined: JsonObject = {};
  for (const [field, schema] of Object.entries(properties)) {
    if (!isObject(schema)) continue;
    // The yield mode is opt-in: without it, bash's schema is the reference's.
    if (name === 'bash' && field === 'yield_time_ms' && !processTools) continue;
    const property = refineProperty(name, field, schema);
    refined[field] = strict ? strictProperty(property, required.includes(field)) : property;
  }
  const base: JsonObject = strict ? {} : { $schema: rendered.$schema ?? null };
  if (base.$schema === null) delete base.$schema;
  return {
    ...base,
    type: 'object',
    properties: refined,
    required: strict ? Object.keys(refined) : required,
    additionalProperties: false,
  };
}

/**
 * Tool definitions for LLM function calling, as plain JSON objects (structured-clone and JSON
 * round trips give equal values; no hidden properties). The input schema describes what the model
 * may send: defaults applied by the tools are advertised as `default` and such fields are not
 * required; `strict: true` gives the strict-mode variant instead.
 */
export function getToolDefinitions(options: ToolDefinitionOptions = {}): ToolDefinition[] {
  const strict = options.strict === true;
  const processTools = options.processTools === true;
  return (options.tools ?? (processTools ? ALL_TOOL_NAMES : TOOL_NAMES)).map((name) => ({
    name,
    description:
      name === 'bash' && processTools
        ? `${TOOL_DESCRIPTIONS.bash}\n\n${BASH_YIELD_DESCRIPTION}`
        : TOOL_DESCRIPTIONS[name],
    inputSchema: inputSchemaOf(name, strict, processTools),
  }));
}
