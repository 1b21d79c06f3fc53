import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { LUA_SCRIPTS } from './lua-scripts.js';

describe('LUA_SCRIPTS', () => {
  it('matches src/lua/*.lua exactly (run `npm run embed-lua -w @sbx/ownership-redis` after editing)', async () => {
    const dir = new URL('./lua/', import.meta.url);
    const files = (await readdir(dir)).filter((f) => f.endsWith('.lua')).sort();
    expect(Object.keys(LUA_SCRIPTS).sort()).toEqual(files.map((f) => f.replace(/\.lua$/, '')));
    for (const file of files) {
      const name = file.replace(/\.lua$/, '') as keyof typeof LUA_SCRIPTS;
      expect(LUA_SCRIPTS[name], file).toBe(await readFile(new URL(file, dir), 'utf8'));
    }
  });
});
