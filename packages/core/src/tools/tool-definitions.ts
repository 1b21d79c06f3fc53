import { z } from 'zod';
import { TOOL_DESCRIPTIONS } from './tool-descriptions.js';
import { TOOL_INPUT_SCHEMAS, TOOL_NAMES, type ToolName } from './tool-schemas.js';

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
}

/**
 * Tool definitions for LLM function calling. The input schema describes what the model may send
 * (defaults applied by the tools are advertised as `default`, and such fields are not required).
 */
export function getToolDefinitions(options: ToolDefinitionOptions = {}): ToolDefinition[] {
  return (options.tools ?? TOOL_NAMES).map((name) => ({
    name,
    description: TOOL_DESCRIPTIONS[name],
    inputSchema: z.toJSONSchema(TOOL_INPUT_SCHEMAS[name], { io: 'input' }) as JsonSchema,
  }));
}
