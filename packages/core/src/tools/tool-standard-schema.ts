import type { JsonSchema, ToolDefinition } from './tool-definitions.js';

/** Arguments of a tool call before sbx has validated them: whatever the model sent. */
export type RawToolArguments = Record<string, unknown>;

/**
 * The Standard Schema v1 interface with the Standard JSON Schema extension
 * (https://standardschema.dev), the shape the AI SDK, LangChain and others accept for tool
 * parameters. Written out here so core needs no dependency for a type.
 */
export interface StandardJsonSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => { readonly value: Output };
    readonly jsonSchema: {
      readonly input: (options: { readonly target: string }) => JsonSchema;
      readonly output: (options: { readonly target: string }) => JsonSchema;
    };
    readonly types?: { readonly input: Input; readonly output: Output };
  };
}

function forTarget(schema: JsonSchema, target: string): JsonSchema {
  // The schemas use no keyword that differs between the drafts; only the `$schema` marker names
  // one, and a consumer asking for draft-07 must not be handed a 2020-12 marker.
  if (target === 'draft-2020-12') return structuredClone(schema);
  const { $schema: _marker, ...rest } = schema;
  return structuredClone(rest);
}

/**
 * A tool's input schema as a Standard JSON Schema that describes but does not validate: its
 * `validate` accepts every value. sbx validates the arguments inside the tool call, so a bad
 * argument reaches the model as sbx's own message ("Invalid arguments for read_file: path:
 * required") instead of a framework's generic schema error raised before sbx runs.
 */
export function describingToolSchema(
  definition: Pick<ToolDefinition, 'inputSchema'>,
): StandardJsonSchemaV1<RawToolArguments> {
  const schema = definition.inputSchema;
  return {
    '~standard': {
      version: 1,
      vendor: 'sbx',
      validate: (value) => ({ value: value as RawToolArguments }),
      jsonSchema: {
        input: ({ target }) => forTarget(schema, target),
        output: ({ target }) => forTarget(schema, target),
      },
    },
  };
}
