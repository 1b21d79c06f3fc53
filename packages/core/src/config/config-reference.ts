import { sandboxSectionInputSchema } from './config-section-schema.js';
import { zod } from './zod-runtime.js';

/** One key of the `sandbox:` section, for generated documentation and editor tooling. */
export interface ConfigKeyInfo {
  /** Snake_case path as users write it; list items appear as `[]`, e.g. `sandbox.mounts[].host_path`. */
  readonly path: string;
  /** Human-readable type, e.g. `integer`, `"wait" | "reject" | "burst"`, `list of mappings`. */
  readonly type: string;
  /** No default and not optional: the key must be written. */
  readonly required: boolean;
  readonly hasDefault: boolean;
  readonly default: unknown;
  /** Numeric and length bounds, e.g. `> 0`, `>= 2`, `<= 65535`. */
  readonly constraints: readonly string[];
  /** Contents are validated by another package and may hold any keys. */
  readonly open: boolean;
  readonly description: string;
}

interface JsonSchemaNode {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchemaNode>;
  required?: string[];
  items?: JsonSchemaNode;
  additionalProperties?: boolean | JsonSchemaNode;
  propertyNames?: JsonSchemaNode;
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
}

/** JSON Schema (draft 2020-12) of the snake_case `sandbox:` section, as an editor would validate it. */
export function sandboxConfigJsonSchema(): Record<string, unknown> {
  return zod().toJSONSchema(sandboxSectionInputSchema(), { io: 'input' }) as Record<
    string,
    unknown
  >;
}

function isOpenRecord(node: JsonSchemaNode): boolean {
  return (
    node.properties === undefined &&
    typeof node.additionalProperties === 'object' &&
    Object.keys(node.additionalProperties).length === 0
  );
}

function typeName(node: JsonSchemaNode): string {
  if (node.enum) return node.enum.map((v) => JSON.stringify(v)).join(' | ');
  const t = node.type;
  if (Array.isArray(t)) return t.join(' | ');
  if (t === 'array')
    return node.items?.type === 'object'
      ? 'list of mappings'
      : `list of ${node.items ? typeName(node.items) : 'values'}`;
  if (t === 'object') {
    if (node.properties) return 'mapping';
    if (isOpenRecord(node)) return 'open mapping';
    const values =
      typeof node.additionalProperties === 'object'
        ? typeName(node.additionalProperties)
        : 'values';
    return `map of ${values}`;
  }
  return t ?? 'any';
}

// zod states integer bounds as the safe-integer range; that is noise in a reference table.
const NOISE = new Set([Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]);

function constraintsOf(node: JsonSchemaNode): string[] {
  const out: string[] = [];
  if (node.exclusiveMinimum !== undefined) out.push(`> ${node.exclusiveMinimum}`);
  if (node.minimum !== undefined && !NOISE.has(node.minimum)) out.push(`>= ${node.minimum}`);
  if (node.exclusiveMaximum !== undefined) out.push(`< ${node.exclusiveMaximum}`);
  if (node.maximum !== undefined && !NOISE.has(node.maximum)) out.push(`<= ${node.maximum}`);
  if (node.minLength === 1) out.push('non-empty');
  return out;
}

function walk(node: JsonSchemaNode, prefix: string, out: ConfigKeyInfo[]): void {
  const required = new Set(node.required ?? []);
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    const path = `${prefix}.${key}`;
    const hasDefault = 'default' in child;
    out.push({
      path,
      type: typeName(child),
      required: required.has(key) && !hasDefault,
      hasDefault,
      default: child.default,
      constraints: constraintsOf(child),
      open: child.type === 'object' && isOpenRecord(child),
      description: child.description ?? '',
    });
    if (child.properties) walk(child, path, out);
    if (child.type === 'array' && child.items?.properties) walk(child.items, `${path}[]`, out);
  }
}

/**
 * Every key of the `sandbox:` section with its type, default, bounds and description, in schema
 * order. Generated from the schema itself, so documentation built from it cannot drift.
 */
export function listSandboxConfigKeys(): ConfigKeyInfo[] {
  const out: ConfigKeyInfo[] = [];
  walk(sandboxConfigJsonSchema() as JsonSchemaNode, 'sandbox', out);
  return out;
}
