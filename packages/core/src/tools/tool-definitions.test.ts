import { describe, expect, it } from 'vitest';
import { getToolDefinitions } from './tool-definitions.js';
import { parseToolInput, type ToolName } from './tool-schemas.js';

type Schema = {
  properties: Record<string, { default?: unknown; type?: unknown }>;
  required?: string[];
};

const definitions = getToolDefinitions();
const byName = (name: string) => {
  const def = definitions.find((d) => d.name === name);
  if (!def) throw new Error(`no ${name}`);
  return { ...def, schema: def.inputSchema as unknown as Schema };
};

describe('§9A model-facing tool contract', () => {
  it('offers the seven tools in order, each with a description and a JSON schema', () => {
    expect(definitions.map((d) => d.name)).toEqual([
      'bash',
      'ls',
      'glob',
      'grep',
      'read_file',
      'write_file',
      'str_replace',
    ]);
    for (const def of definitions) {
      expect(def.description.length).toBeGreaterThan(40);
      expect(def.inputSchema).toMatchObject({ type: 'object' });
    }
  });

  it.each([
    ['bash', ['description', 'command'], ['command']],
    ['ls', ['description', 'path'], ['path']],
    [
      'glob',
      ['description', 'pattern', 'path', 'include_dirs', 'max_results'],
      ['pattern', 'path'],
    ],
    [
      'grep',
      ['description', 'pattern', 'path', 'glob', 'literal', 'case_sensitive', 'max_results'],
      ['pattern', 'path'],
    ],
    ['read_file', ['description', 'path', 'start_line', 'end_line'], ['path']],
    ['write_file', ['description', 'path', 'content', 'append'], ['path', 'content']],
    [
      'str_replace',
      ['description', 'path', 'old_str', 'new_str', 'replace_all'],
      ['path', 'old_str', 'new_str'],
    ],
  ])('%s has exactly the fields %j, requiring %j', (name, fields, required) => {
    const { schema } = byName(name);
    expect(Object.keys(schema.properties)).toEqual(fields);
    expect([...(schema.required ?? [])].sort()).toEqual([...required].sort());
  });

  it('description is optional with default "" on every tool', () => {
    for (const def of definitions) {
      const schema = def.inputSchema as unknown as Schema;
      expect(schema.properties.description).toMatchObject({ type: 'string', default: '' });
      expect(schema.required ?? []).not.toContain('description');
    }
  });

  it('advertises the documented defaults', () => {
    expect(byName('glob').schema.properties.include_dirs?.default).toBe(false);
    expect(byName('glob').schema.properties.max_results?.default).toBe(200);
    expect(byName('grep').schema.properties.max_results?.default).toBe(100);
    expect(byName('grep').schema.properties.literal?.default).toBe(false);
    expect(byName('grep').schema.properties.case_sensitive?.default).toBe(false);
    expect(byName('write_file').schema.properties.append?.default).toBe(false);
    expect(byName('str_replace').schema.properties.replace_all?.default).toBe(false);
  });

  it('the bash description carries the operating guidance', () => {
    const text = byName('bash').description;
    expect(text).toContain('uname -s');
    expect(text).toContain('sw_vers');
    expect(text).toContain('background');
    expect(text).toContain('/mnt/user-data/workspace/.venv');
    expect(text).toContain('python -m pip');
  });

  it('filters and orders tools on request (e.g. without bash)', () => {
    expect(getToolDefinitions({ tools: ['read_file', 'ls'] }).map((d) => d.name)).toEqual([
      'read_file',
      'ls',
    ]);
  });
});

describe('input validation', () => {
  it('applies defaults and lets description default to ""', () => {
    const parsed = parseToolInput('grep', { pattern: 'x', path: '/mnt/user-data/workspace' });
    expect(parsed).toEqual({
      ok: true,
      value: {
        description: '',
        pattern: 'x',
        path: '/mnt/user-data/workspace',
        literal: false,
        case_sensitive: false,
        max_results: 100,
      },
    });
  });

  it('accepts null for optional fields the model may send as null', () => {
    expect(parseToolInput('read_file', { path: '/a', start_line: null, end_line: null }).ok).toBe(
      true,
    );
    expect(parseToolInput('grep', { pattern: 'x', path: '/a', glob: null }).ok).toBe(true);
  });

  it('lists every bad field in one Error: result', () => {
    const parsed = parseToolInput('read_file', { start_line: 'two', end_line: 1.5 });
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.error).toMatch(/^Error: Invalid arguments for read_file: /);
    expect(parsed.error).toContain('path: required');
    expect(parsed.error).toContain('start_line: expected number, received string');
    expect(parsed.error).toContain('end_line: expected int');
  });

  it('refuses a blank command and a non-object input', () => {
    expect(parseToolInput('bash', { command: '   ' })).toEqual({
      ok: false,
      error: 'Error: Invalid arguments for bash: command: command must not be empty',
    });
    expect(parseToolInput('ls', 'path')).toMatchObject({ ok: false });
  });
});

/** Every own property name, enumerable or not, of every object in `value`, recursively. */
function hiddenProperties(value: unknown, path = '$'): string[] {
  if (typeof value !== 'object' || value === null) return [];
  const hidden: string[] = [];
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key);
    if (typeof key === 'symbol' || !descriptor?.enumerable) hidden.push(`${path}.${String(key)}`);
    hidden.push(
      ...hiddenProperties(
        (value as Record<string, unknown>)[key as string],
        `${path}.${String(key)}`,
      ),
    );
  }
  return hidden;
}

/** The strict-mode rules of OpenAI function calling, as its structured-outputs guide states them. */
function strictModeProblems(schema: Record<string, unknown>, path = '$'): string[] {
  const allowed = new Set([
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
  const problems: string[] = [];
  for (const key of Object.keys(schema)) {
    if (!allowed.has(key)) problems.push(`${path}: keyword '${key}' is not supported`);
  }
  if (schema.type === 'object') {
    const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
    if (schema.additionalProperties !== false) {
      problems.push(`${path}: additionalProperties must be false`);
    }
    const required = new Set((schema.required ?? []) as string[]);
    for (const [name, property] of Object.entries(properties)) {
      if (!required.has(name)) problems.push(`${path}.${name}: every property must be required`);
      problems.push(...strictModeProblems(property, `${path}.${name}`));
    }
  }
  for (const branch of (schema.anyOf ?? []) as Record<string, unknown>[]) {
    problems.push(...strictModeProblems(branch, `${path}|`));
  }
  return problems;
}

describe('tool definitions are plain JSON for every SDK', () => {
  it.each([false, true])(
    'strict=%s: JSON and structured-clone round trips are equal, nothing hidden',
    (strict) => {
      const defs = getToolDefinitions({ strict });
      expect(JSON.parse(JSON.stringify(defs))).toEqual(defs);
      expect(structuredClone(defs)).toEqual(defs);
      expect(hiddenProperties(defs).filter((p) => !p.endsWith('.length'))).toEqual([]);
    },
  );

  it.each([false, true])(
    'strict=%s: compiles under ajv strict mode, closed objects',
    async (strict) => {
      const { Ajv2020 } = await import('ajv/dist/2020.js');
      const ajv = new Ajv2020({ strict: true });
      for (const def of getToolDefinitions({ strict })) {
        expect(def.inputSchema.additionalProperties).toBe(false);
        const validate = ajv.compile(def.inputSchema);
        expect(validate({ unknown_field: 1 })).toBe(false);
      }
    },
  );

  it('advertises the bounds the tools apply: start_line/end_line >= 1, max_results capped', () => {
    const read = byName('read_file').schema.properties as Record<string, { anyOf?: unknown[] }>;
    expect(read.start_line?.anyOf?.[0]).toEqual({ type: 'integer', minimum: 1 });
    expect(read.end_line?.anyOf?.[0]).toEqual({ type: 'integer', minimum: 1 });
    expect(byName('glob').schema.properties.max_results).toMatchObject({
      minimum: 1,
      maximum: 1000,
    });
    expect(byName('grep').schema.properties.max_results).toMatchObject({
      minimum: 1,
      maximum: 500,
    });
  });

  it('the strict variant follows the strict-mode rules and the tools accept what it allows', () => {
    for (const def of getToolDefinitions({ strict: true })) {
      expect(strictModeProblems(def.inputSchema), def.name).toEqual([]);
      expect(def.inputSchema.$schema).toBeUndefined();
    }
    // A strict-mode model sends every field, optional ones as null: that means "omitted".
    const parsed = parseToolInput('glob', {
      description: null,
      pattern: '*.ts',
      path: '/mnt/user-data/workspace',
      include_dirs: null,
      max_results: null,
    });
    expect(parsed).toEqual({
      ok: true,
      value: {
        description: '',
        pattern: '*.ts',
        path: '/mnt/user-data/workspace',
        include_dirs: false,
        max_results: 200,
      },
    });
  });

  it('plain and strict schemas accept the same real calls (ajv against the tools’ own parser)', async () => {
    const { Ajv2020 } = await import('ajv/dist/2020.js');
    const ajv = new Ajv2020({ strict: true });
    const strict = Object.fromEntries(
      getToolDefinitions({ strict: true }).map((d) => [d.name, ajv.compile(d.inputSchema)]),
    );
    const call = {
      description: null,
      path: '/mnt/user-data/workspace/a.txt',
      start_line: 2,
      end_line: null,
    };
    expect(strict.read_file?.(call)).toBe(true);
    expect(parseToolInput('read_file', call).ok).toBe(true);
    expect(strict.read_file?.({ ...call, start_line: 0 })).toBe(false);
  });
});

describe('the process tools, model-facing (with processTools)', () => {
  const all = getToolDefinitions({ processTools: true });
  const schemaOf = (name: string) =>
    all.find((d) => d.name === name)?.inputSchema as unknown as Schema;

  it('offers the seven, then the four process tools, each with a description and a JSON schema', () => {
    expect(all.map((d) => d.name)).toEqual([
      'bash',
      'ls',
      'glob',
      'grep',
      'read_file',
      'write_file',
      'str_replace',
      'process_output',
      'process_write',
      'process_kill',
      'process_list',
    ]);
    for (const def of all) {
      expect(def.description.length, def.name).toBeGreaterThan(40);
      expect(def.inputSchema).toMatchObject({ type: 'object' });
    }
    expect(Object.keys(schemaOf('bash').properties)).toEqual([
      'description',
      'command',
      'yield_time_ms',
    ]);
  });

  it.each([
    ['process_output', ['description', 'process_id', 'wait_ms'], ['process_id']],
    ['process_write', ['description', 'process_id', 'input', 'wait_ms'], ['process_id', 'input']],
    ['process_kill', ['description', 'process_id', 'signal'], ['process_id']],
    ['process_list', ['description'], []],
  ])('%s has exactly the fields %j, requiring %j', (name, fields, required) => {
    const schema = schemaOf(name);
    expect(Object.keys(schema.properties)).toEqual(fields);
    expect([...(schema.required ?? [])].sort()).toEqual([...required].sort());
  });

  it('the strict variants follow the strict-mode rules, and strict calls parse (ajv and the parser agree)', async () => {
    const strictDefs = getToolDefinitions({ processTools: true, strict: true });
    for (const def of strictDefs) {
      expect(strictModeProblems(def.inputSchema), def.name).toEqual([]);
    }
    const { Ajv2020 } = await import('ajv/dist/2020.js');
    const ajv = new Ajv2020({ strict: true });
    const validate = Object.fromEntries(
      strictDefs.map((d) => [d.name, ajv.compile(d.inputSchema)]),
    );
    const calls: [string, Record<string, unknown>][] = [
      ['bash', { description: null, command: 'npm run dev', yield_time_ms: 2_000 }],
      ['process_output', { description: null, process_id: 'p1', wait_ms: null }],
      ['process_write', { description: null, process_id: 'p1', input: 'q\n', wait_ms: 500 }],
      ['process_kill', { description: null, process_id: 'p1', signal: null }],
      ['process_list', { description: null }],
    ];
    for (const [name, call] of calls) {
      expect(validate[name]?.(call), name).toBe(true);
      expect(parseToolInput(name as ToolName, call).ok, name).toBe(true);
    }
    // Past a bound: the plain schema says so, and the parser refuses it whatever the model was
    // shown (strict mode drops string lengths, so there the parser is the only check).
    const plain = ajv.compile(
      getToolDefinitions({ processTools: true, tools: ['process_output'] })[0]!.inputSchema,
    );
    const tooLong = { process_id: 'x'.repeat(65) };
    expect(plain(tooLong)).toBe(false);
    expect(parseToolInput('process_output', tooLong).ok).toBe(false);
    expect(validate.process_output?.({ ...tooLong, description: null, wait_ms: null })).toBe(true);
    expect(parseToolInput('process_output', { ...tooLong, wait_ms: 600_001 }).ok).toBe(false);
  });
});
