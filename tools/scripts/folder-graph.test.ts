import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CORE_LAYERS, renderLayerDiagram } from './core-layers.mjs';
import {
  DIAGRAM_BEGIN,
  DIAGRAM_END,
  diagramInDoc,
  findCycles,
  folderGraph,
  graphProblems,
  layerBreaches,
} from './folder-graph.mjs';

let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
  root = undefined;
});

async function tree(files: Record<string, string>): Promise<string> {
  root = await mkdtemp(path.join(tmpdir(), 'sbx-folders-'));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), text);
  }
  return root;
}

const edgesOf = (graph: Map<string, Map<string, string[]>>) =>
  [...graph].flatMap(([from, to]) => [...to.keys()].map((t) => `${from}->${t}`)).sort();

describe('folder graph', () => {
  // The enforcement: this repository's packages keep the rule the tests below define.
  it('this repository: no folder cycle in any package, no layer breach in core, the diagram current', async () => {
    expect(await graphProblems()).toEqual([]);
  });

  it('reads static, type, re-export and dynamic relative imports of non-test sources only', async () => {
    const src = await tree({
      'a/one.ts': "import { x } from '../b/x.js';\nimport type { T } from '../c/t.js';\n",
      'a/two.ts': "export { y } from '../d/y.js';\nconst m = () => import('../e/m.js');\n",
      'a/three.ts': "import '../f/side.js';\nimport { z } from './z.js';\nimport k from 'kleur';\n",
      'a/one.test.ts': "import { w } from '../g/w.js';\n",
      'index.ts': "export * from './a/one.js';\n",
      'b/x.ts': "import { idx } from '../index.js';\n",
    });
    expect(edgesOf(await folderGraph(src))).toEqual(['a->b', 'a->c', 'a->d', 'a->e', 'a->f']);
  });

  it('finds every folder cycle, and none in a layered graph', () => {
    const graph = (edges: string[]) => {
      const g = new Map<string, Map<string, string[]>>();
      for (const e of edges) {
        const [from, to] = e.split('->');
        if (!g.has(from)) g.set(from, new Map());
        if (!g.has(to)) g.set(to, new Map());
        g.get(from)!.set(to, []);
      }
      return g;
    };
    expect(findCycles(graph(['a->b', 'b->c', 'c->a', 'd->e', 'e->d', 'f->a']))).toEqual([
      ['a', 'b', 'c'],
      ['d', 'e'],
    ]);
    expect(findCycles(graph(['tools->paths', 'paths->errors', 'tools->errors']))).toEqual([]);
  });

  it('names an edge into the same or a higher layer, and a folder without a layer', () => {
    const layers = [
      { folders: ['errors'] },
      { folders: ['paths', 'search'] },
      { folders: ['tools'] },
    ];
    const g = new Map([
      ['errors', new Map([['tools', ['errors/e.ts: ../tools/t.js']]])],
      ['paths', new Map([['search', ['paths/p.ts: ../search/s.js']]])],
      [
        'tools',
        new Map([
          ['paths', []],
          ['extra', []],
        ]),
      ],
      ['stray', new Map()],
    ]);
    expect(layerBreaches(g, layers).map((b: { why: string }) => b.why)).toEqual([
      'errors may not use tools',
      'paths may not use search',
      'folder stray has no layer',
      'folder extra has no layer',
    ]);
  });

  it('reads the generated diagram between its markers', () => {
    const doc = `# A\n${DIAGRAM_BEGIN}\n\n${renderLayerDiagram()}\n\n${DIAGRAM_END}\nrest\n`;
    expect(diagramInDoc(doc)).toBe(renderLayerDiagram().trim());
    expect(diagramInDoc('# no markers')).toBeUndefined();
    for (const layer of CORE_LAYERS) {
      for (const folder of layer.folders) expect(renderLayerDiagram()).toContain(`\`${folder}\``);
    }
  });
});
