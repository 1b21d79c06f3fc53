import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareNames, compareRelativePaths } from './search-order.js';

interface Node {
  children: Map<string, Node>;
}

function dfs(node: Node, prefix: string, out: string[]): void {
  for (const name of [...node.children.keys()].sort(compareNames)) {
    const rel = prefix ? `${prefix}/${name}` : name;
    out.push(rel);
    dfs(node.children.get(name)!, rel, out);
  }
}

describe('compareRelativePaths', () => {
  it('puts a directory right before its contents', () => {
    const paths = ['b.txt', 'a/x', 'a-b', 'a', 'a/y/z'];
    expect([...paths].sort(compareRelativePaths)).toEqual(['a', 'a/x', 'a/y/z', 'a-b', 'b.txt']);
  });

  it('property: equals a depth-first walk with sorted listings', () => {
    const seg = fc.constantFrom('a', 'b', 'a-b', 'a.b', 'B', '_', 'z');
    fc.assert(
      fc.property(
        fc.array(fc.array(seg, { minLength: 1, maxLength: 4 }), { maxLength: 12 }),
        (lists) => {
          const root: Node = { children: new Map() };
          for (const list of lists) {
            let node = root;
            for (const s of list) {
              let next = node.children.get(s);
              if (!next) node.children.set(s, (next = { children: new Map() }));
              node = next;
            }
          }
          const walk: string[] = [];
          dfs(root, '', walk);
          expect([...walk].reverse().sort(compareRelativePaths)).toEqual(walk);
        },
      ),
    );
  });
});
