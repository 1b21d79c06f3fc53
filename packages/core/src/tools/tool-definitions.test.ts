import { describe, expect, it } from 'vitest';
import { getToolDefinitions } from './tool-definitions.js';
import { parseToolInput } from './tool-schemas.js';

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
